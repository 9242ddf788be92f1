package compactor.harness;

import java.nio.ByteBuffer;

import org.apache.hadoop.mapred.ShuffleHandler;
import org.apache.hadoop.yarn.server.api.ApplicationInitializationContext;
import org.apache.hadoop.yarn.server.api.ApplicationTerminationContext;
import org.apache.hadoop.yarn.server.api.AuxiliaryService;

/**
 * Stands in for the NodeManager's {@code mapreduce_shuffle} auxiliary service, which every
 * MapReduce container launch names (so it must exist) but which only reducers use. Hadoop's
 * ShuffleHandler listens on all interfaces (it has no bind-host setting); this one listens
 * nowhere, so every port of the cluster stays on 127.0.0.1. Consequence: jobs with reducers
 * cannot fetch map output on this cluster; map-only jobs (the tool's) are unaffected.
 */
public final class NoShuffle extends AuxiliaryService {

  public NoShuffle() {
    super(ShuffleHandler.MAPREDUCE_SHUFFLE_SERVICEID);
  }

  @Override
  public void initializeApplication(ApplicationInitializationContext context) {}

  @Override
  public void stopApplication(ApplicationTerminationContext context) {}

  /** The "port" the MapReduce AM reads back from a container launch: there is none. */
  @Override
  public ByteBuffer getMetaData() {
    try {
      return ShuffleHandler.serializeMetaData(0);
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }
}

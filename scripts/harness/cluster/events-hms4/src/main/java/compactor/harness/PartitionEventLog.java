package compactor.harness;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HMSHandler;
import org.apache.hadoop.hive.metastore.TransactionalMetaStoreEventListener;
import org.apache.hadoop.hive.metastore.Warehouse;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.apache.hadoop.hive.metastore.api.NotificationEvent;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.events.AlterPartitionEvent;
import org.apache.hadoop.hive.metastore.messaging.EventMessage;
import org.apache.hadoop.hive.metastore.messaging.MessageBuilder;
import org.apache.hadoop.hive.metastore.messaging.MessageEncoder;
import org.apache.hadoop.hive.metastore.messaging.MessageFactory;

/**
 * Records each partition alteration in the metastore's notification log, as Hive's
 * DbNotificationListener does (see pom.xml for why that one is not used here). Registered as a
 * transactional listener, it runs inside the metastore transaction of the alteration, so the
 * event is committed or rolled back with it; the metastore numbers events when it stores them.
 */
public class PartitionEventLog extends TransactionalMetaStoreEventListener {
  private final MessageEncoder encoder;

  public PartitionEventLog(Configuration conf) {
    super(conf);
    // The encoder metastore.event.message.factory names: gzip'd JSON by default on Hive 4.
    encoder = MessageFactory.getDefaultInstance(conf);
  }

  @Override
  public void onAlterPartition(AlterPartitionEvent change) throws MetaException {
    Table table = change.getTable();
    EventMessage message = MessageBuilder.getInstance().buildAlterPartitionMessage(table,
        change.getOldPartition(), change.getNewPartition(), change.getIsTruncateOp(),
        change.getWriteId());
    NotificationEvent event = new NotificationEvent(0,
        (int) (System.currentTimeMillis() / 1000),
        EventMessage.EventType.ALTER_PARTITION.toString(),
        encoder.getSerializer().serialize(message));
    event.setMessageFormat(encoder.getMessageFormat());
    event.setCatName(table.isSetCatName() ? table.getCatName() : Warehouse.DEFAULT_CATALOG_NAME);
    event.setDbName(table.getDbName());
    event.setTableName(table.getTableName());
    // The calling thread's object store: the one whose transaction is open.
    HMSHandler.getMSForConf(getConf()).addNotificationEvent(event);
  }
}

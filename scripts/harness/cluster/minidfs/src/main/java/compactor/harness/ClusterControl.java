package compactor.harness;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;

import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.protocol.LocatedBlock;
import org.apache.hadoop.hdfs.protocol.LocatedBlocks;
import org.apache.hadoop.hdfs.server.blockmanagement.DatanodeDescriptor;
import org.apache.hadoop.hdfs.server.blockmanagement.DatanodeManager;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.namenode.NameNode;

/**
 * Faults on demand in the running cluster, for tests (scripts/cluster datanode|namenode): a
 * server socket on 127.0.0.1 that takes one command line per connection and, once the command
 * is done, answers one line, {@code ok WHAT} or {@code error WHY}. Commands run one at a time.
 *
 * <ul>
 *   <li>{@code datanode list}: {@code I up|down 127.0.0.1:XFER, ipc IPC} per DataNode, joined
 *       by {@code "; "}.
 *   <li>{@code datanode kill I}: stops DataNode I as MiniDFSCluster does (its sockets closed, no
 *       word to the NameNode, which learns of it only when its heartbeats expire) and returns
 *       once its data and IPC ports refuse connections.
 *   <li>{@code datanode start I}: starts it again on the same ports and storage, and returns once
 *       it has registered with the NameNode.
 *   <li>{@code datanode restart I}: kill, then start.
 *   <li>{@code datanode holding PATH}: the DataNodes the NameNode lists for the last block of
 *       PATH (the one being written, for a file under construction), space-separated.
 *   <li>{@code namenode restart}: only with one NameNode (no --ha, no --viewfs); returns once it
 *       is active, out of safe mode, and every running DataNode has registered again and sent
 *       its block report (until then the NameNode lists fewer replicas than there are).
 * </ul>
 *
 * <p>DataNodes keep the numbers they had at start: MiniDFSCluster renumbers its list when one
 * stops and appends it when it starts again, so they are told apart by their data transfer
 * ports, which a restart keeps (their UUIDs are known only once they have registered).
 */
final class ClusterControl {

  private static final long TIMEOUT_MS = 120_000;

  private final MiniDFSCluster cluster;
  private final boolean oneNameNode;
  private final List<String> uuids = new ArrayList<>();
  private final List<Integer> xferPorts = new ArrayList<>();
  private final List<Integer> ipcPorts = new ArrayList<>();
  private final Map<Integer, MiniDFSCluster.DataNodeProperties> down = new HashMap<>();
  private final ServerSocket server;

  ClusterControl(MiniDFSCluster cluster, boolean oneNameNode) throws IOException {
    this.cluster = cluster;
    this.oneNameNode = oneNameNode;
    for (DataNode dn : cluster.getDataNodes()) {
      uuids.add(dn.getDatanodeUuid());
      xferPorts.add(dn.getXferPort());
      ipcPorts.add(dn.getIpcPort());
    }
    server = new ServerSocket(0, 8, InetAddress.getByName("127.0.0.1"));
  }

  int port() {
    return server.getLocalPort();
  }

  void start() {
    Thread t = new Thread(this::serve, "cluster-control");
    t.setDaemon(true);
    t.start();
  }

  private void serve() {
    while (!server.isClosed()) {
      try (Socket s = server.accept()) {
        // A client that never sends its line must not block the commands of others for long.
        s.setSoTimeout(10_000);
        BufferedReader in = new BufferedReader(
            new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
        Writer out = new OutputStreamWriter(s.getOutputStream(), StandardCharsets.UTF_8);
        String line = in.readLine();
        String reply;
        try {
          reply = "ok " + run(line == null ? new String[0] : line.trim().split("\\s+"));
        } catch (Exception e) {
          reply = "error " + oneLine(e);
        }
        System.out.println("cluster-control: " + line + " -> " + reply);
        out.write(reply + "\n");
        out.flush();
      } catch (IOException e) {
        System.err.println("cluster-control: " + e);
      }
    }
  }

  private static String oneLine(Throwable e) {
    String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return m.lines().findFirst().orElse("").trim();
  }

  private String run(String[] cmd) throws Exception {
    String what = String.join(" ", cmd);
    if (cmd.length == 2 && cmd[0].equals("datanode") && cmd[1].equals("list")) {
      return list();
    }
    if (cmd.length == 3 && cmd[0].equals("datanode") && cmd[1].equals("holding")) {
      return holding(cmd[2]);
    }
    if (cmd.length == 3 && cmd[0].equals("datanode")) {
      int i = slot(cmd[2]);
      switch (cmd[1]) {
        case "kill":
          return kill(i);
        case "start":
          return start(i);
        case "restart":
          return kill(i) + "; " + start(i);
        default:
          break;
      }
    }
    if (cmd.length == 2 && cmd[0].equals("namenode") && cmd[1].equals("restart")) {
      return restartNameNode();
    }
    throw new IllegalArgumentException("unknown command '" + what + "' (datanode list|kill I|"
        + "start I|restart I|holding PATH, namenode restart)");
  }

  private int slot(String s) {
    int i;
    try {
      i = Integer.parseInt(s);
    } catch (NumberFormatException e) {
      i = -1;
    }
    if (i < 0 || i >= uuids.size()) {
      throw new IllegalArgumentException(
          "no DataNode " + s + ": this cluster has 0.." + (uuids.size() - 1));
    }
    return i;
  }

  private String ports(int i) {
    return "127.0.0.1:" + xferPorts.get(i) + ", ipc " + ipcPorts.get(i);
  }

  /** Where MiniDFSCluster lists DataNode {@code i} now. */
  private int indexOf(int i) {
    List<DataNode> live = cluster.getDataNodes();
    for (int k = 0; k < live.size(); k++) {
      if (live.get(k).getXferPort() == xferPorts.get(i)) {
        return k;
      }
    }
    throw new IllegalStateException("DataNode " + i + " is down");
  }

  private String list() {
    StringJoiner all = new StringJoiner("; ");
    for (int i = 0; i < uuids.size(); i++) {
      all.add(i + " " + (down.containsKey(i) ? "down" : "up") + " " + ports(i));
    }
    return all.toString();
  }

  private String kill(int i) throws Exception {
    MiniDFSCluster.DataNodeProperties stopped = cluster.stopDataNode(indexOf(i));
    down.put(i, stopped);
    refused(xferPorts.get(i));
    refused(ipcPorts.get(i));
    return "DataNode " + i + " killed (" + ports(i) + " refuse connections)";
  }

  /** Waits until nothing accepts connections on {@code port}. */
  private static void refused(int port) throws Exception {
    long deadline = System.currentTimeMillis() + TIMEOUT_MS;
    while (true) {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
      } catch (ConnectException e) {
        return;
      }
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("port " + port + " still accepts connections");
      }
      Thread.sleep(100);
    }
  }

  private String start(int i) throws Exception {
    MiniDFSCluster.DataNodeProperties stopped = down.get(i);
    if (stopped == null) {
      throw new IllegalStateException("DataNode " + i + " is already up");
    }
    if (!cluster.restartDataNode(stopped, true)) {
      throw new IllegalStateException("MiniDFSCluster did not restart DataNode " + i);
    }
    down.remove(i);
    DataNode dn = cluster.getDataNodes().get(indexOf(i));
    cluster.waitDatanodeFullyStarted(dn, (int) TIMEOUT_MS);
    if (dn.getIpcPort() != ipcPorts.get(i) || !uuids.get(i).equals(dn.getDatanodeUuid())) {
      throw new IllegalStateException("DataNode " + i + " came back as another: ipc port "
          + dn.getIpcPort() + ", UUID " + dn.getDatanodeUuid());
    }
    return "DataNode " + i + " started (" + ports(i) + ") and registered with the NameNode";
  }

  private String holding(String path) throws Exception {
    LocatedBlocks blocks = locate(path);
    LocatedBlock last = blocks.getLastLocatedBlock();
    if (last == null && !blocks.getLocatedBlocks().isEmpty()) {
      last = blocks.getLocatedBlocks().get(blocks.getLocatedBlocks().size() - 1);
    }
    if (last == null) {
      throw new IllegalArgumentException(path + " has no blocks");
    }
    StringJoiner slots = new StringJoiner(" ");
    for (DatanodeInfo d : last.getLocations()) {
      int i = uuids.indexOf(d.getDatanodeUuid());
      slots.add(i >= 0 ? Integer.toString(i) : d.getXferAddr());
    }
    return slots.toString();
  }

  /** Whether every running DataNode has sent {@code nn} a block report since it started. */
  private boolean reported(NameNode nn) {
    DatanodeManager dm = nn.getNamesystem().getBlockManager().getDatanodeManager();
    for (DataNode dn : cluster.getDataNodes()) {
      DatanodeDescriptor d = dm.getDatanode(dn.getDatanodeUuid());
      if (d == null || !d.checkBlockReportReceived()) {
        return false;
      }
    }
    return true;
  }

  /**
   * The blocks of {@code path} from the first active NameNode that has it: --ha may have failed
   * over, and under --viewfs each NameNode holds its own namespace.
   */
  private LocatedBlocks locate(String path) throws Exception {
    Exception first = null;
    for (int i = 0; i < cluster.getNumNameNodes(); i++) {
      if (!cluster.getNameNode(i).isActiveState()) {
        continue;
      }
      try {
        LocatedBlocks blocks = cluster.getNameNodeRpc(i).getBlockLocations(path, 0, Long.MAX_VALUE);
        if (blocks != null) {
          return blocks;
        }
      } catch (IOException e) {
        first = first == null ? e : first;
      }
    }
    throw first != null ? first : new IllegalArgumentException(path + " does not exist");
  }

  private String restartNameNode() throws Exception {
    if (!oneNameNode) {
      throw new IllegalStateException("namenode restart needs a cluster of one NameNode, not "
          + "--ha or --viewfs (fail over with `scripts/cluster haadmin` instead)");
    }
    long t0 = System.currentTimeMillis();
    cluster.restartNameNode(0, false);
    NameNode nn = cluster.getNameNode(0);
    int dataNodes = cluster.getDataNodes().size();
    while (!nn.isActiveState() || nn.isInSafeMode() || !reported(nn)) {
      if (System.currentTimeMillis() - t0 > TIMEOUT_MS) {
        throw new IllegalStateException("the restarted NameNode is not active, out of safe mode"
            + " and reported to by " + dataNodes + " DataNodes after " + TIMEOUT_MS / 1000 + " s");
      }
      Thread.sleep(100);
    }
    return "NameNode restarted at 127.0.0.1:" + nn.getNameNodeAddress().getPort()
        + " (web " + nn.getHttpAddress().getPort() + "), active, out of safe mode, block reports"
        + " of " + dataNodes + " DataNodes in, after " + (System.currentTimeMillis() - t0) + " ms";
  }
}

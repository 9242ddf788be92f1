package compactor.harness;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.security.UserGroupInformation;

/**
 * Runs a MiniDFSCluster (one NameNode, one DataNode) on 127.0.0.1 until the process is told to
 * stop (SIGTERM/SIGINT), for scripts/cluster.
 *
 * <p>Ports default to 0, so the kernel picks free ones and several clusters can run side by
 * side. Once the cluster is up and the usual top directories exist, the chosen ports are written
 * to the ready file (Java properties, written to a temporary name then renamed, so a reader never
 * sees half a file). The script waits for that file.
 *
 * <p>Usage: {@code ClusterDfs --dir DIR --ready-file FILE [--nn-port N] [--http-port N]
 * [--supergroup NAME]
 * [--keytab FILE --realm REALM]}
 */
public final class ClusterDfs {

  private ClusterDfs() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> opts = parseArgs(args);
    Path dir = Paths.get(required(opts, "--dir")).toAbsolutePath();
    Path readyFile = Paths.get(required(opts, "--ready-file")).toAbsolutePath();
    int nnPort = Integer.parseInt(opts.getOrDefault("--nn-port", "0"));
    int httpPort = Integer.parseInt(opts.getOrDefault("--http-port", "0"));
    String superGroup = opts.getOrDefault("--supergroup", "supergroup");
    // Kerberos (scripts/cluster start --secure): the keytab of hdfs/localhost and HTTP/localhost
    // and the realm; java.security.krb5.conf must name the KDC.
    String keytab = opts.get("--keytab");

    Files.createDirectories(dir);
    Files.deleteIfExists(readyFile);

    Configuration conf = configuration(dir, superGroup);
    if (keytab != null) {
      secure(conf, keytab, required(opts, "--realm"));
    }
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
        .numDataNodes(1)
        .nameNodePort(nnPort)
        .nameNodeHttpPort(httpPort)
        // Every start is a fresh file system: the metastore's Derby database is recreated by
        // scripts/cluster at the same time, so the two never disagree.
        .format(true)
        .build();
    cluster.waitActive();

    // Stop the cluster cleanly when scripts/cluster sends SIGTERM.
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        cluster.shutdown();
      } finally {
        stopped.countDown();
      }
    }, "cluster-dfs-shutdown"));

    createLayout(cluster.getFileSystem());
    writeReadyFile(readyFile, cluster);
    System.out.println("ClusterDfs ready: hdfs://127.0.0.1:" + cluster.getNameNodePort());

    stopped.await();
  }

  /** Settings of a small, permission-checking HDFS whose data lives under {@code dir}. */
  private static Configuration configuration(Path dir, String superGroup) throws IOException {
    Configuration conf = new HdfsConfiguration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, dir.toString());
    conf.setBoolean("dfs.permissions.enabled", true);
    conf.set("dfs.permissions.superusergroup", superGroup);
    conf.setBoolean("dfs.namenode.acls.enabled", true);
    conf.setInt("dfs.replication", 1);
    // Small blocks keep multi-block files cheap to produce in tests.
    conf.setLong("dfs.namenode.fs-limits.min-block-size", 1024);
    // Whoever starts the cluster (the HDFS superuser) may impersonate anyone, so tests can act
    // as a non-superuser through a proxy user as well as through HADOOP_USER_NAME.
    String me = UserGroupInformation.getCurrentUser().getShortUserName();
    conf.set("hadoop.proxyuser." + me + ".hosts", "*");
    conf.set("hadoop.proxyuser." + me + ".groups", "*");
    // Trash on, like most production clusters (minutes).
    conf.setLong("fs.trash.interval", 60);
    return conf;
  }

  /**
   * Kerberos for the NameNode and DataNode (one principal, hdfs/localhost, as Hadoop's own
   * secure MiniDFS tests do), block access tokens, SASL on data transfer (authentication only),
   * which lets the DataNode use unprivileged ports; then logs in as hdfs/localhost, so the
   * cluster's own client (createLayout) is the HDFS superuser. The metastore's principal
   * (hive) may impersonate its SASL clients, as Hive's metastore does.
   */
  private static void secure(Configuration conf, String keytab, String realm) throws IOException {
    String hdfs = "hdfs/localhost@" + realm;
    conf.set("hadoop.security.authentication", "kerberos");
    conf.set("dfs.namenode.kerberos.principal", hdfs);
    conf.set("dfs.namenode.keytab.file", keytab);
    conf.set("dfs.datanode.kerberos.principal", hdfs);
    conf.set("dfs.datanode.keytab.file", keytab);
    conf.set("dfs.web.authentication.kerberos.principal", "HTTP/localhost@" + realm);
    conf.set("dfs.web.authentication.kerberos.keytab", keytab);
    conf.setBoolean("dfs.block.access.token.enable", true);
    conf.set("dfs.data.transfer.protection", "authentication");
    conf.setBoolean("ignore.secure.ports.for.testing", true);
    conf.set("hadoop.proxyuser.hive.hosts", "*");
    conf.set("hadoop.proxyuser.hive.groups", "*");
    conf.set("hadoop.proxyuser.hdfs.hosts", "*");
    conf.set("hadoop.proxyuser.hdfs.groups", "*");
    UserGroupInformation.setConfiguration(conf);
    UserGroupInformation.loginUserFromKeytab(hdfs, keytab);
  }

  /** The directories a Hive deployment expects: /tmp, /user and the two warehouses. */
  private static void createLayout(FileSystem fs) throws IOException {
    mkdirs(fs, "/tmp", (short) 01777);
    mkdirs(fs, "/user", (short) 0755);
    mkdirs(fs, "/user/hive", (short) 0755);
    // Sticky and world-writable: the metastore and test users of any name may create tables.
    mkdirs(fs, "/user/hive/warehouse", (short) 01777);
    mkdirs(fs, "/user/hive/external", (short) 01777);
  }

  private static void mkdirs(FileSystem fs, String path, short mode) throws IOException {
    org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(path);
    fs.mkdirs(p);
    // setPermission, not mkdirs' argument: mkdirs applies the umask.
    fs.setPermission(p, new FsPermission(mode));
  }

  private static void writeReadyFile(Path readyFile, MiniDFSCluster cluster) throws IOException {
    Path tmp = readyFile.resolveSibling(readyFile.getFileName() + ".tmp");
    try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
      w.write("nn_rpc_port=" + cluster.getNameNodePort() + "\n");
      w.write("nn_http_port=" + cluster.getNameNode().getHttpAddress().getPort() + "\n");
      w.write("pid=" + ProcessHandle.current().pid() + "\n");
    }
    Files.move(tmp, readyFile, StandardCopyOption.ATOMIC_MOVE);
  }

  private static Map<String, String> parseArgs(String[] args) {
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i < args.length; i++) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        throw new IllegalArgumentException("expected --name value pairs, got: " + args[i]);
      }
      opts.put(args[i], args[++i]);
    }
    return opts;
  }

  private static String required(Map<String, String> opts, String name) {
    String v = opts.get(name);
    if (v == null) {
      throw new IllegalArgumentException("missing " + name);
    }
    return v;
  }
}

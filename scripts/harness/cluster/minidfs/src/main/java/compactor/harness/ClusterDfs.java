package compactor.harness;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.MiniDFSNNTopology;
import org.apache.hadoop.hdfs.client.CreateEncryptionZoneFlag;
import org.apache.hadoop.hdfs.client.HdfsAdmin;
import org.apache.hadoop.hdfs.qjournal.MiniJournalCluster;
import org.apache.hadoop.hdfs.server.namenode.NameNode;
import org.apache.hadoop.security.UserGroupInformation;

/**
 * Runs a MiniDFSCluster (one NameNode, {@code --datanodes} DataNodes; more with the profiles
 * below) on 127.0.0.1 until the process is told to stop (SIGTERM/SIGINT), for scripts/cluster.
 *
 * <p>Ports default to 0, so the kernel picks free ones and several clusters can run side by
 * side. Once the cluster is up and the usual top directories exist, the chosen ports are written
 * to the ready file (Java properties, written to a temporary name then renamed, so a reader never
 * sees half a file). The script waits for that file. The ready file also names the port of
 * {@link ClusterControl}, which stops and starts DataNodes and the NameNode for tests.
 *
 * <p>Usage: {@code ClusterDfs --dir DIR --ready-file FILE [--nn-port N] [--http-port N]
 * [--supergroup NAME] [--datanodes N] [--replication R]
 * [--keytab FILE --realm REALM [--token-renew-ms MS] [--token-max-ms MS]] [--homes U,V,...]
 * [--client-conf FILE]
 * [--ha true] [--ha-proxy CLASS] [--ha-tail-period DURATION] [--viewfs true] [--kms-uri URI]
 * [--ec true]}
 *
 * <p>Profiles (scripts/cluster start --ha/--viewfs/--kms/--ec), each optional:
 * <ul>
 *   <li>{@code --ha}: nameservice ns1 of three NameNodes sharing a quorum journal (three
 *       JournalNodes, as Hadoop's MiniQJMHACluster sets up): nn1 active, nn2 standby, nn3
 *       observer; the standby and the observer tail in-progress edits every
 *       {@code --ha-tail-period} (default 100ms).
 *   <li>{@code --viewfs}: two federated NameNodes (nameservices nsA and nsB) behind the mount
 *       table {@code viewfs://cluster}.
 *   <li>{@code --kms-uri}: the key provider (a KMS already running) of the NameNodes and
 *       clients; the encryption zone /warehouse/ez on key ezkey.
 *   <li>{@code --ec}: RS-3-2-1024k on /warehouse/ec_rs, XOR-2-1-1024k on /warehouse/ec_xor;
 *       needs five DataNodes.
 * </ul>
 *
 * <p>With {@code --client-conf FILE}, the settings a client needs are written there, one a line,
 * {@code core:NAME=VALUE} (core-site.xml), {@code hdfs:NAME=VALUE} (hdfs-site.xml), and
 * {@code env:NAME=VALUE} (what scripts/cluster env exports), before the ready file.
 */
public final class ClusterDfs {

  private ClusterDfs() {}

  /** The nameservice of --ha and the names its NameNodes have for clients. */
  static final String HA_NS = "ns1";
  static final String[] HA_NNS = {"nn1", "nn2", "nn3"};
  /** The nameservices of --viewfs and the mount table's name. */
  static final String[] FED_NS = {"nsA", "nsB"};
  static final String VIEWFS = "cluster";
  static final String EZ_DIR = "/warehouse/ez";
  static final String EZ_KEY = "ezkey";
  static final String EC_RS_DIR = "/warehouse/ec_rs";
  static final String EC_XOR_DIR = "/warehouse/ec_xor";
  static final String EC_RS = "RS-3-2-1024k";
  static final String EC_XOR = "XOR-2-1-1024k";

  public static void main(String[] args) {
    try {
      run(args);
    } catch (Throwable t) {
      // Threads of a half-started cluster would keep the JVM alive: make start-up fail fast.
      t.printStackTrace();
      System.exit(1);
    }
  }

  /** A port free on 127.0.0.1 right now (for the NameNodes of --ha, which must know them). */
  private static int freePort() throws IOException {
    try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1,
        java.net.InetAddress.getByName("127.0.0.1"))) {
      return s.getLocalPort();
    }
  }

  private static void run(String[] args) throws Exception {
    Map<String, String> opts = parseArgs(args);
    Path dir = Paths.get(required(opts, "--dir")).toAbsolutePath();
    Path readyFile = Paths.get(required(opts, "--ready-file")).toAbsolutePath();
    int nnPort = Integer.parseInt(opts.getOrDefault("--nn-port", "0"));
    int httpPort = Integer.parseInt(opts.getOrDefault("--http-port", "0"));
    String superGroup = opts.getOrDefault("--supergroup", "supergroup");
    int dataNodes = Integer.parseInt(opts.getOrDefault("--datanodes", "1"));
    int replication = Integer.parseInt(opts.getOrDefault("--replication", "1"));
    // Kerberos (scripts/cluster start --secure): the keytab of hdfs/localhost and HTTP/localhost
    // and the realm; java.security.krb5.conf must name the KDC.
    String keytab = opts.get("--keytab");
    boolean ha = Boolean.parseBoolean(opts.getOrDefault("--ha", "false"));
    boolean viewfs = Boolean.parseBoolean(opts.getOrDefault("--viewfs", "false"));
    boolean ec = Boolean.parseBoolean(opts.getOrDefault("--ec", "false"));
    String kmsUri = opts.get("--kms-uri");
    String clientConf = opts.get("--client-conf");
    if (ha && viewfs) {
      throw new IllegalArgumentException("--ha and --viewfs together are not supported");
    }
    if (ec && dataNodes < 5) {
      throw new IllegalArgumentException("--ec needs 5 DataNodes (RS-3-2), not " + dataNodes);
    }

    Files.createDirectories(dir);
    Files.deleteIfExists(readyFile);
    // Test utilities (the JournalNodes among them) put their data under this property.
    System.setProperty("test.build.data", dir.resolve("test-data").toString());

    Configuration conf = configuration(dir, superGroup, replication);
    if (keytab != null) {
      secure(conf, keytab, required(opts, "--realm"));
      // Delegation token lifetimes (scripts/cluster's CLUSTER_TOKEN_*), Hadoop's by default.
      if (opts.containsKey("--token-renew-ms")) {
        conf.setLong("dfs.namenode.delegation.token.renew-interval",
            Long.parseLong(opts.get("--token-renew-ms")));
      }
      if (opts.containsKey("--token-max-ms")) {
        conf.setLong("dfs.namenode.delegation.token.max-lifetime",
            Long.parseLong(opts.get("--token-max-ms")));
      }
    }
    if (kmsUri != null) {
      conf.set("hadoop.security.key.provider.path", kmsUri);
      conf.set("dfs.encryption.key.provider.uri", kmsUri);
    }
    if (ec) {
      // The policy a directory gets from `hdfs ec -setPolicy` without -policy, and the only one
      // enabled at start (instead of RS-6-3-1024k, which needs 9 DataNodes).
      conf.set("dfs.namenode.ec.system.default.policy", EC_RS);
    }
    List<String> client = new ArrayList<>();

    MiniDFSCluster cluster;
    MiniJournalCluster journal = null;
    // The file system the layout is made on (for viewfs: per nameservice, below).
    List<DistributedFileSystem> admins = new ArrayList<>();
    String defaultFs;
    if (ha) {
      // What an observer needs (as Hadoop's TestObserverNode sets up): edits tailed from the
      // journal while still in progress, and the client's state id honoured.
      conf.setBoolean("dfs.ha.tail-edits.in-progress", true);
      conf.set("dfs.ha.tail-edits.period", opts.getOrDefault("--ha-tail-period", "100ms"));
      conf.setBoolean("dfs.namenode.state.context.enabled", true);
      conf.setBoolean("dfs.ha.automatic-failover.enabled", false);
      // What MiniQJMHACluster does, less its JournalNode wait (which needs a test class the
      // shaded minicluster leaves out) and with ports chosen free rather than at random.
      journal = new MiniJournalCluster.Builder(conf, dir.resolve("journal").toFile())
          .numJournalNodes(3)
          .format(true)
          .build();
      conf.set("dfs.namenode.shared.edits.dir", journal.getQuorumJournalURI(HA_NS).toString());
      MiniDFSNNTopology.NSConf ns = new MiniDFSNNTopology.NSConf(HA_NS);
      for (String nn : HA_NNS) {
        ns.addNN(new MiniDFSNNTopology.NNConf(nn).setIpcPort(freePort()).setHttpPort(freePort()));
      }
      // Format, then put the edits in the journal, then start for real (as MiniQJMHACluster).
      cluster = new MiniDFSCluster.Builder(conf)
          .nnTopology(new MiniDFSNNTopology().addNameservice(ns))
          .manageNameDfsSharedDirs(false)
          .numDataNodes(dataNodes)
          .format(true)
          .build();
      cluster.waitActive();
      cluster.shutdownNameNodes();
      NameNode.initializeSharedEdits(cluster.getConfiguration(0), true);
      cluster.restartNameNodes();
      cluster.transitionToActive(0);
      cluster.waitActive();
      cluster.transitionToObserver(2);
      defaultFs = "hdfs://" + HA_NS;
      String proxy = opts.getOrDefault("--ha-proxy",
          "org.apache.hadoop.hdfs.server.namenode.ha.ObserverReadProxyProvider");
      client.add("hdfs:dfs.nameservices=" + HA_NS);
      client.add("hdfs:dfs.ha.namenodes." + HA_NS + "=" + String.join(",", HA_NNS));
      for (int i = 0; i < HA_NNS.length; i++) {
        client.add("hdfs:dfs.namenode.rpc-address." + HA_NS + "." + HA_NNS[i] + "=127.0.0.1:"
            + cluster.getNameNode(i).getNameNodeAddress().getPort());
        client.add("hdfs:dfs.namenode.http-address." + HA_NS + "." + HA_NNS[i] + "=127.0.0.1:"
            + cluster.getNameNode(i).getHttpAddress().getPort());
      }
      StringBuilder rpc = new StringBuilder();
      StringBuilder http = new StringBuilder();
      for (int i = 0; i < HA_NNS.length; i++) {
        String sep = i == 0 ? "" : ",";
        rpc.append(sep).append(HA_NNS[i]).append("=127.0.0.1:")
            .append(cluster.getNameNode(i).getNameNodeAddress().getPort());
        http.append(sep).append(HA_NNS[i]).append("=127.0.0.1:")
            .append(cluster.getNameNode(i).getHttpAddress().getPort());
      }
      client.add("env:CLUSTER_HA_RPC_ADDRESSES=" + rpc);
      client.add("env:CLUSTER_HA_HTTP_ADDRESSES=" + http);
      client.add("hdfs:dfs.client.failover.proxy.provider." + HA_NS + "=" + proxy);
      client.add("hdfs:dfs.ha.automatic-failover.enabled=false");
      client.add("env:CLUSTER_HA_NAMESERVICE=" + HA_NS);
      client.add("env:CLUSTER_HA_NAMENODES=" + String.join(",", HA_NNS));
      client.add("env:CLUSTER_HA_PROXY=" + proxy);
      admins.add(cluster.getFileSystem(0));
    } else if (viewfs) {
      cluster = new MiniDFSCluster.Builder(conf)
          .nnTopology(MiniDFSNNTopology.simpleFederatedTopology(String.join(",", FED_NS)))
          .numDataNodes(dataNodes)
          .format(true)
          .build();
      cluster.waitActive();
      defaultFs = "viewfs://" + VIEWFS;
      client.add("hdfs:dfs.nameservices=" + String.join(",", FED_NS));
      // Each nameservice as a one-NameNode "HA" nameservice: a Java client resolves a logical
      // hdfs://nsA only through a failover proxy provider.
      StringBuilder urls = new StringBuilder();
      for (int i = 0; i < FED_NS.length; i++) {
        String ns = FED_NS[i];
        int port = cluster.getNameNode(i).getNameNodeAddress().getPort();
        client.add("hdfs:dfs.ha.namenodes." + ns + "=nn1");
        client.add("hdfs:dfs.namenode.rpc-address." + ns + ".nn1=127.0.0.1:" + port);
        client.add("hdfs:dfs.namenode.http-address." + ns + ".nn1=127.0.0.1:"
            + cluster.getNameNode(i).getHttpAddress().getPort());
        client.add("hdfs:dfs.client.failover.proxy.provider." + ns
            + "=org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider");
        urls.append(i == 0 ? "" : ",").append(ns).append("=hdfs://127.0.0.1:").append(port);
        admins.add(cluster.getFileSystem(i));
      }
      String mt = "core:fs.viewfs.mounttable." + VIEWFS + ".";
      client.add(mt + "link./warehouse/a=hdfs://" + FED_NS[0] + "/warehouse/a");
      client.add(mt + "link./warehouse/b=hdfs://" + FED_NS[1] + "/warehouse/b");
      client.add(mt + "link./user=hdfs://" + FED_NS[0] + "/user");
      client.add(mt + "link./tmp=hdfs://" + FED_NS[0] + "/tmp");
      client.add(mt + "linkFallback=hdfs://" + FED_NS[0] + "/");
      client.add("env:CLUSTER_VIEWFS_MOUNTS=/warehouse/a,/warehouse/b,/user,/tmp");
      client.add("env:CLUSTER_VIEWFS_TARGETS=/warehouse/a=hdfs://" + FED_NS[0]
          + "/warehouse/a,/warehouse/b=hdfs://" + FED_NS[1] + "/warehouse/b,/user=hdfs://"
          + FED_NS[0] + "/user,/tmp=hdfs://" + FED_NS[0] + "/tmp,fallback=hdfs://"
          + FED_NS[0] + "/");
      client.add("env:CLUSTER_VIEWFS_NAMESERVICES=" + urls);
    } else {
      cluster = new MiniDFSCluster.Builder(conf)
          .numDataNodes(dataNodes)
          .nameNodePort(nnPort)
          .nameNodeHttpPort(httpPort)
          // Every start is a fresh file system: the metastore's Derby database is recreated by
          // scripts/cluster at the same time, so the two never disagree.
          .format(true)
          .build();
      cluster.waitActive();
      defaultFs = "hdfs://127.0.0.1:" + cluster.getNameNodePort();
      admins.add(cluster.getFileSystem());
    }
    if (kmsUri != null) {
      client.add("core:hadoop.security.key.provider.path=" + kmsUri);
      client.add("hdfs:dfs.encryption.key.provider.uri=" + kmsUri);
    }

    // Stop the cluster cleanly when scripts/cluster sends SIGTERM.
    CountDownLatch stopped = new CountDownLatch(1);
    MiniJournalCluster journalFinal = journal;
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        cluster.shutdown();
        if (journalFinal != null) {
          journalFinal.shutdown();
        }
      } catch (IOException e) {
        e.printStackTrace();
      } finally {
        stopped.countDown();
      }
    }, "cluster-dfs-shutdown"));

    DistributedFileSystem fs = admins.get(0);
    createLayout(fs);
    // Home directories, as a cluster's user provisioning makes them (the secure cluster's users).
    for (String user : opts.getOrDefault("--homes", "").split(",")) {
      if (!user.isEmpty()) {
        org.apache.hadoop.fs.Path home = new org.apache.hadoop.fs.Path("/user/" + user);
        mkdirs(fs, home.toString(), (short) 0755);
        fs.setOwner(home, user, user);
      }
    }
    if (viewfs) {
      mkdirs(fs, "/warehouse", (short) 0755);
      mkdirs(fs, "/warehouse/a", (short) 01777);
      DistributedFileSystem b = admins.get(1);
      mkdirs(b, "/tmp", (short) 01777);
      mkdirs(b, "/warehouse", (short) 0755);
      mkdirs(b, "/warehouse/b", (short) 01777);
    }
    if (kmsUri != null) {
      mkdirs(fs, "/warehouse", (short) 0755);
      mkdirs(fs, EZ_DIR, (short) 01777);
      new HdfsAdmin(fs.getUri(), conf).createEncryptionZone(new org.apache.hadoop.fs.Path(EZ_DIR),
          EZ_KEY, EnumSet.of(CreateEncryptionZoneFlag.PROVISION_TRASH));
      client.add("env:CLUSTER_EZ_DIR=" + EZ_DIR);
      client.add("env:CLUSTER_EZ_KEY=" + EZ_KEY);
      client.add("env:CLUSTER_KMS_URI=" + kmsUri);
    }
    if (ec) {
      for (DistributedFileSystem a : admins) {
        a.enableErasureCodingPolicy(EC_RS);
        a.enableErasureCodingPolicy(EC_XOR);
      }
      mkdirs(fs, "/warehouse", (short) 0755);
      mkdirs(fs, EC_RS_DIR, (short) 01777);
      mkdirs(fs, EC_XOR_DIR, (short) 01777);
      fs.setErasureCodingPolicy(new org.apache.hadoop.fs.Path(EC_RS_DIR), EC_RS);
      fs.setErasureCodingPolicy(new org.apache.hadoop.fs.Path(EC_XOR_DIR), EC_XOR);
      client.add("env:CLUSTER_EC_RS_DIR=" + EC_RS_DIR);
      client.add("env:CLUSTER_EC_XOR_DIR=" + EC_XOR_DIR);
      client.add("env:CLUSTER_EC_RS_POLICY=" + EC_RS);
      client.add("env:CLUSTER_EC_XOR_POLICY=" + EC_XOR);
    }
    if (clientConf != null) {
      writeAtomically(Paths.get(clientConf).toAbsolutePath(), String.join("\n", client) + "\n");
    }
    ClusterControl control = new ClusterControl(cluster, !ha && !viewfs);
    control.start();
    writeReadyFile(readyFile, cluster, defaultFs, control.port());
    System.out.println("ClusterDfs ready: " + defaultFs);

    stopped.await();
  }

  /** Settings of a small, permission-checking HDFS whose data lives under {@code dir}. */
  private static Configuration configuration(Path dir, String superGroup, int replication)
      throws IOException {
    Configuration conf = new HdfsConfiguration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, dir.toString());
    conf.setBoolean("dfs.permissions.enabled", true);
    conf.set("dfs.permissions.superusergroup", superGroup);
    conf.setBoolean("dfs.namenode.acls.enabled", true);
    conf.setInt("dfs.replication", replication);
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
    // The secure YARN's daemons (yarn/localhost, user yarn, no local account) in the HDFS
    // superuser group, as a cluster puts its YARN and history users in its hadoop group: the
    // JobHistory server reads the jobs' history files, which their users' AMs write 0770.
    conf.set("hadoop.user.group.static.mapping.overrides",
        "dr.who=;yarn=" + conf.get("dfs.permissions.superusergroup"));
    // The group mapping is a singleton, made already (configuration() asked for the current
    // user): made again, with the setting above.
    org.apache.hadoop.security.Groups.getUserToGroupsMappingServiceWithLoadedConfiguration(conf);
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

  /** The ports of the first NameNode (the active one of --ha, nsA's of --viewfs). */
  private static void writeReadyFile(Path readyFile, MiniDFSCluster cluster, String defaultFs,
      int controlPort) throws IOException {
    writeAtomically(readyFile,
        "nn_rpc_port=" + cluster.getNameNode(0).getNameNodeAddress().getPort() + "\n"
        + "nn_http_port=" + cluster.getNameNode(0).getHttpAddress().getPort() + "\n"
        + "default_fs=" + defaultFs + "\n"
        + "control_port=" + controlPort + "\n"
        + "pid=" + ProcessHandle.current().pid() + "\n");
  }

  private static void writeAtomically(Path file, String text) throws IOException {
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
      w.write(text);
    }
    Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
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

package compactor.harness;

import java.io.IOException;
import java.io.OutputStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.v2.MiniMRYarnCluster;
import org.apache.hadoop.mapreduce.v2.jobhistory.JHAdminConfig;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.webapp.util.WebAppUtils;

/**
 * Runs a MiniMRYarnCluster (one ResourceManager, one NodeManager, the MapReduce JobHistory
 * server) on 127.0.0.1 on top of an HDFS that already runs (scripts/cluster's ClusterDfs), until
 * the process is told to stop (SIGTERM/SIGINT).
 *
 * <p>Every port is chosen by the kernel (the minicluster binds "localhost:0"). Once the cluster
 * is up, the client configuration an edge node would have is written to {@code --conf-dir}
 * (yarn-site.xml and mapred-site.xml: every setting of the running cluster that differs from
 * Hadoop's defaults, addresses included; core-site.xml stays scripts/cluster's), and the
 * addresses to the ready file (Java properties, written to a temporary name then renamed).
 *
 * <p>With {@code --principal P --keytab FILE} (a secure cluster: scripts/cluster start --secure
 * --yarn), Kerberos: the JVM logs in as P from FILE, and the ResourceManager, the NodeManager
 * and the JobHistory server all are P. They share this JVM, and Hadoop's login user is one per
 * JVM: a server of the three presenting another principal than the one it was configured with
 * would be refused by its clients. The HDFS client settings (core-site.xml, hdfs-site.xml: the
 * NameNode's principal, SASL on data transfer) must be on the class path: parts of the
 * NodeManager (the resource localizer) read a configuration of their own from there.
 * {@code --token-renew-ms}/{@code --token-max-ms} set the
 * ResourceManager's delegation token lifetimes. Log aggregation is off: it opens container
 * logs through Hadoop's SecureIOUtils, which refuses to work on a secure cluster without
 * libhadoop (native code, which Maven does not ship); the logs stay in the NodeManager's log
 * directory. Containers run as the user this JVM runs as (DefaultContainerExecutor).
 *
 * <p>Usage: {@code ClusterYarn --dir DIR --ready-file FILE --fs hdfs://127.0.0.1:PORT
 * --conf-dir DIR [--nm-memory-mb 6144] [--nm-vcores 8] [--container-java-opts "..."]
 * [--principal P --keytab FILE [--token-renew-ms MS] [--token-max-ms MS]]}
 */
public final class ClusterYarn {

  private ClusterYarn() {}

  /** HDFS directory of the MapReduce staging area (and so of the job history files). */
  static final String STAGING_DIR = "/tmp/hadoop-yarn/staging-mini";

  /** HDFS directory the NodeManager aggregates container logs into (`yarn logs`). */
  static final String REMOTE_LOG_DIR = "/tmp/logs";

  public static void main(String[] args) throws Exception {
    Map<String, String> opts = parseArgs(args);
    Path dir = Paths.get(required(opts, "--dir")).toAbsolutePath();
    Path readyFile = Paths.get(required(opts, "--ready-file")).toAbsolutePath();
    Path confDir = Paths.get(required(opts, "--conf-dir")).toAbsolutePath();
    String fs = required(opts, "--fs");
    int nmMemoryMb = Integer.parseInt(opts.getOrDefault("--nm-memory-mb", "6144"));
    int nmVcores = Integer.parseInt(opts.getOrDefault("--nm-vcores", "8"));
    String containerJavaOpts = opts.getOrDefault("--container-java-opts", "");

    Files.createDirectories(dir);
    Files.deleteIfExists(readyFile);
    // The minicluster puts its work dir (NodeManager local and log dirs) under this property,
    // "target/test/data" of the current directory by default.
    System.setProperty("test.build.data", dir.resolve("work").toString());

    PinnedConf conf = configuration(dir, fs, nmMemoryMb, nmVcores, containerJavaOpts);
    if (opts.containsKey("--principal")) {
      secure(conf, opts);
    }
    MiniMRYarnCluster cluster = new MiniMRYarnCluster("cluster-yarn", 1);
    cluster.init(conf);
    cluster.start();

    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        cluster.stop();
      } finally {
        stopped.countDown();
      }
    }, "cluster-yarn-shutdown"));

    Configuration running = cluster.getConfig();
    writeClientConf(confDir, running);
    writeReadyFile(readyFile, running);
    System.out.println("ClusterYarn ready: ResourceManager at "
        + running.get(YarnConfiguration.RM_ADDRESS));

    stopped.await();
  }

  /**
   * A YarnConfiguration in which some settings, once pinned, keep their value whatever later
   * code sets: MiniMRYarnCluster overwrites a few of them unconditionally in its init.
   */
  static final class PinnedConf extends YarnConfiguration {
    private Map<String, String> pinned;

    void pin(String name, String value) {
      if (pinned == null) {
        pinned = new HashMap<>();
      }
      pinned.put(name, value);
      set(name, value);
    }

    @Override
    public void set(String name, String value, String source) {
      String p = pinned == null ? null : pinned.get(name);
      super.set(name, p != null ? p : value, source);
    }
  }

  private static void secure(PinnedConf conf, Map<String, String> opts) throws IOException {
    String principal = required(opts, "--principal");
    String keytab = required(opts, "--keytab");
    conf.set("hadoop.security.authentication", "kerberos");
    conf.set(YarnConfiguration.RM_PRINCIPAL, principal);
    conf.set(YarnConfiguration.RM_KEYTAB, keytab);
    conf.set(YarnConfiguration.NM_PRINCIPAL, principal);
    conf.set(YarnConfiguration.NM_KEYTAB, keytab);
    conf.set(JHAdminConfig.MR_HISTORY_PRINCIPAL, principal);
    conf.set(JHAdminConfig.MR_HISTORY_KEYTAB, keytab);
    if (opts.containsKey("--token-renew-ms")) {
      conf.setLong(YarnConfiguration.RM_DELEGATION_TOKEN_RENEW_INTERVAL_KEY,
          Long.parseLong(opts.get("--token-renew-ms")));
    }
    if (opts.containsKey("--token-max-ms")) {
      conf.setLong(YarnConfiguration.RM_DELEGATION_TOKEN_MAX_LIFETIME_KEY,
          Long.parseLong(opts.get("--token-max-ms")));
    }
    conf.pin(YarnConfiguration.LOG_AGGREGATION_ENABLED, "false");
    UserGroupInformation.setConfiguration(conf);
    UserGroupInformation.loginUserFromKeytab(principal, keytab);
  }

  private static PinnedConf configuration(Path dir, String fs, int nmMemoryMb, int nmVcores,
      String containerJavaOpts) {
    PinnedConf conf = new PinnedConf();
    conf.set("fs.defaultFS", fs);
    conf.set("hadoop.tmp.dir", dir.resolve("tmp").toString());
    // The ResourceManager's node attribute store defaults to a path under hadoop.tmp.dir on
    // the default file system, HDFS, where the secure YARN's principal may not create it: the
    // local disk, as a single-node cluster keeps it.
    conf.set("yarn.node-attribute.fs-store.root-dir",
        dir.resolve("node-attribute").toUri().toString());

    // Resources: one NodeManager big enough for 4 map tasks of 1024 MB and an AM of 512 MB at
    // once. The minicluster sizes its NodeManager from yarn.minicluster.nm.pmem-mb.
    conf.setInt(YarnConfiguration.YARN_MINICLUSTER_NM_PMEM_MB, nmMemoryMb);
    conf.setInt(YarnConfiguration.NM_VCORES, nmVcores);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, nmMemoryMb);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES, nmVcores);
    // Room for several jobs' AMs at once (the default allows 10% of the cluster for AMs).
    conf.setFloat("yarn.scheduler.capacity.maximum-am-resource-percent", 0.5f);
    // Each job ships the tool's binary (~600 MB in a debug build), which the NodeManager keeps
    // in its local cache (10 GB by default, swept every 10 minutes): a test run of a few dozen
    // jobs would fill a small disk. Kept to 1 GB, swept every minute.
    conf.setLong("yarn.nodemanager.localizer.cache.target-size-mb", 1024);
    conf.setLong("yarn.nodemanager.localizer.cache.cleanup.interval-ms", 60_000);
    // A nearly full disk must not make the only node unhealthy.
    conf.setFloat(
        YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 100.0f);

    // Memory enforcement as a real cluster does it: the physical memory of each container is
    // watched (a task above its mapreduce.map.memory.mb is killed), virtual memory is not. The
    // two minicluster switches hand these settings to us instead of turning monitoring off.
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_CONTROL_RESOURCE_MONITORING, true);
    conf.setBoolean("mapreduce.minicluster.control-resource-monitoring", true);
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, true);
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    // Hadoop 3.4's monitor leaves a container alone when this "strict" (cgroups) enforcement is
    // on, as it is by default, even without cgroups: off, so the polling check above acts.
    conf.setBoolean("yarn.nodemanager.resource.memory.enforced", false);

    // A small AM; the JVM options of the cluster (and Java 17's --add-opens) for AMs and
    // tasks as "admin" options, which come before the job's own java.opts.
    conf.setInt("yarn.app.mapreduce.am.resource.mb", 512);
    conf.set("yarn.app.mapreduce.am.command-opts", "-Xmx320m");
    String admin = "-Djava.net.preferIPv4Stack=true -Dhadoop.metrics.log.level=WARN "
        + containerJavaOpts;
    conf.set("yarn.app.mapreduce.am.admin-command-opts", admin.trim());
    conf.set("mapreduce.admin.map.child.java.opts", admin.trim());
    conf.set("mapreduce.admin.reduce.child.java.opts", admin.trim());

    // Staging area on HDFS (MiniMRYarnCluster moves the default one to the local disk).
    conf.set("yarn.app.mapreduce.am.staging-dir", STAGING_DIR);

    // Logs of finished containers on HDFS, for `yarn logs -applicationId`.
    conf.setBoolean(YarnConfiguration.LOG_AGGREGATION_ENABLED, true);
    conf.set(YarnConfiguration.NM_REMOTE_APP_LOG_DIR, REMOTE_LOG_DIR);

    conf.setBoolean(YarnConfiguration.TIMELINE_SERVICE_ENABLED, false);

    // No ShuffleHandler: it listens on every interface (see NoShuffle).
    conf.pin(String.format(YarnConfiguration.NM_AUX_SERVICE_FMT, "mapreduce_shuffle"),
        NoShuffle.class.getName());
    return conf;
  }

  /**
   * Settings a client needs: everything in the running cluster's configuration that differs
   * from Hadoop's defaults (addresses with their chosen ports included), less what is the
   * server's own business, split into yarn-site.xml and mapred-site.xml.
   */
  private static void writeClientConf(Path confDir, Configuration running) throws IOException {
    Configuration defaults = new Configuration(false);
    for (String r : new String[] {"core-default.xml", "hdfs-default.xml",
        "mapred-default.xml", "yarn-default.xml"}) {
      defaults.addResource(r);
    }
    Set<String> serverOnly = Set.of(
        "fs.defaultFS", // core-site.xml's
        "hadoop.tmp.dir",
        "fs.permissions.umask-mode", // the minicluster's 000, for its own directories
        "yarn.nodemanager.local-dirs",
        "yarn.nodemanager.log-dirs",
        "yarn.nodemanager.aux-services",
        "yarn.nodemanager.aux-services.mapreduce_shuffle.class",
        "yarn.nodemanager.node-attributes.provider.fs-based.store.root-dir",
        "yarn.node-attribute.fs-store.root-dir");
    Map<String, String> yarn = new TreeMap<>();
    Map<String, String> mapred = new TreeMap<>();
    for (Map.Entry<String, String> e : running) {
      String k = e.getKey();
      String v = running.getRaw(k);
      if (v == null || v.equals(defaults.getRaw(k)) || serverOnly.contains(k)
          || k.startsWith("dfs.") || k.startsWith("hadoop.security.")
          || k.startsWith("hadoop.http.") || k.startsWith("rpc.engine.")
          || k.startsWith("yarn.timeline-service.") || k.startsWith("yarn.minicluster.")) {
        continue;
      }
      if (k.startsWith("mapreduce.") || k.startsWith("mapred.")
          || k.startsWith("yarn.app.mapreduce.")) {
        mapred.put(k, v);
      } else {
        yarn.put(k, v);
      }
    }
    Files.createDirectories(confDir);
    writeXml(confDir.resolve("yarn-site.xml"), yarn);
    writeXml(confDir.resolve("mapred-site.xml"), mapred);
    // All of it, for reading only.
    Path all = confDir.resolve("yarn-cluster-full.xml.txt");
    try (OutputStream out = Files.newOutputStream(all)) {
      running.writeXml(out);
    }
  }

  private static void writeXml(Path file, Map<String, String> props) throws IOException {
    Configuration c = new Configuration(false);
    props.forEach((k, v) -> c.set(k, v, "ClusterYarn"));
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    try (OutputStream out = Files.newOutputStream(tmp)) {
      c.writeXml(out);
    }
    Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
  }

  private static void writeReadyFile(Path readyFile, Configuration c) throws IOException {
    Path tmp = readyFile.resolveSibling(readyFile.getFileName() + ".tmp");
    try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
      w.write("rm_address=" + c.get(YarnConfiguration.RM_ADDRESS) + "\n");
      w.write("rm_scheduler_address=" + c.get(YarnConfiguration.RM_SCHEDULER_ADDRESS) + "\n");
      w.write("rm_web=" + WebAppUtils.getRMWebAppURLWithoutScheme(c) + "\n");
      w.write("jhs_address=" + c.get(JHAdminConfig.MR_HISTORY_ADDRESS) + "\n");
      w.write("jhs_web=" + c.get(JHAdminConfig.MR_HISTORY_WEBAPP_ADDRESS) + "\n");
      w.write("staging_dir=" + c.get("yarn.app.mapreduce.am.staging-dir") + "\n");
      w.write("remote_log_dir=" + c.get(YarnConfiguration.NM_REMOTE_APP_LOG_DIR) + "\n");
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

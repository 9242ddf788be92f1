package compactor.harness;

import java.io.File;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.hadoop.minikdc.MiniKdc;

/**
 * Runs a Kerberos KDC (Hadoop's MiniKdc) on 127.0.0.1 over TCP until told to stop (SIGTERM), for
 * {@code scripts/cluster start --secure}.
 *
 * <p>Creates, in {@code --dir}: {@code hdfs.keytab} (hdfs/localhost and HTTP/localhost: the
 * NameNode, the DataNode and their web servers), {@code hive.keytab} (hive/localhost: the
 * metastore) and {@code client.keytab} (the test user, {@code --client NAME}). Then writes the
 * ready file (realm, port), atomically. The krb5.conf for clients is written by the script.
 * Each {@code --keytab FILE=PRINCIPAL[,PRINCIPAL...]} adds a keytab of those principals in
 * {@code --dir} (the secure YARN's daemons and its user).
 *
 * <p>Usage: {@code ClusterKdc --dir DIR --ready-file FILE [--client NAME]
 * [--keytab FILE=PRINCIPAL[,PRINCIPAL...]]...}
 */
public final class ClusterKdc {

  private ClusterKdc() {}

  public static void main(String[] args) throws Exception {
    String dirArg = null;
    String readyArg = null;
    String client = "tester";
    List<String> extra = new ArrayList<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--dir" -> dirArg = args[i + 1];
        case "--ready-file" -> readyArg = args[i + 1];
        case "--client" -> client = args[i + 1];
        case "--keytab" -> extra.add(args[i + 1]);
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    if (dirArg == null || readyArg == null) {
      throw new IllegalArgumentException("usage: ClusterKdc --dir DIR --ready-file FILE [--client NAME]");
    }
    Path dir = Paths.get(dirArg).toAbsolutePath();
    Path ready = Paths.get(readyArg).toAbsolutePath();
    Files.createDirectories(dir);
    Files.deleteIfExists(ready);

    Properties conf = MiniKdc.createConf();
    conf.setProperty(MiniKdc.KDC_BIND_ADDRESS, "127.0.0.1");
    conf.setProperty(MiniKdc.KDC_PORT, "0"); // a free port, chosen by MiniKdc
    conf.setProperty(MiniKdc.TRANSPORT, "TCP");
    MiniKdc kdc = new MiniKdc(conf, dir.resolve("work").toFile());
    kdc.start();

    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        kdc.stop();
      } finally {
        stopped.countDown();
      }
    }, "cluster-kdc-shutdown"));

    // createPrincipal rewrites the keytab: every principal of one keytab goes in one call.
    kdc.createPrincipal(dir.resolve("hdfs.keytab").toFile(), "hdfs/localhost", "HTTP/localhost");
    kdc.createPrincipal(dir.resolve("hive.keytab").toFile(), "hive/localhost");
    kdc.createPrincipal(dir.resolve("client.keytab").toFile(), client);
    List<String> keytabs = new ArrayList<>(List.of("hdfs.keytab", "hive.keytab", "client.keytab"));
    for (String e : extra) {
      int eq = e.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("--keytab FILE=PRINCIPAL[,PRINCIPAL...], not " + e);
      }
      String file = e.substring(0, eq);
      kdc.createPrincipal(dir.resolve(file).toFile(), e.substring(eq + 1).split(","));
      keytabs.add(file);
    }
    for (String k : keytabs) {
      File f = dir.resolve(k).toFile();
      f.setReadable(false, false);
      f.setReadable(true, true);
    }

    Path tmp = ready.resolveSibling(ready.getFileName() + ".tmp");
    try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
      w.write("realm=" + kdc.getRealm() + "\n");
      w.write("kdc_port=" + kdc.getPort() + "\n");
      w.write("client_principal=" + client + "@" + kdc.getRealm() + "\n");
    }
    Files.move(tmp, ready, StandardCopyOption.ATOMIC_MOVE);
    System.out.println("ClusterKdc ready: " + kdc.getRealm() + " on 127.0.0.1:" + kdc.getPort());
    stopped.await();
  }
}

package compactor.harness;

import java.io.File;
import java.io.Writer;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.crypto.key.KeyProvider;
import org.apache.hadoop.crypto.key.KeyProviderFactory;
import org.apache.hadoop.crypto.key.kms.server.MiniKMS;

/**
 * Runs Hadoop's MiniKMS (plain HTTP, simple authentication, every ACL open, keys in a JCEKS
 * keystore under {@code --dir}) on the given port of localhost until SIGTERM/SIGINT, for
 * scripts/cluster start --kms. Once it answers, the keys named by {@code --keys} (comma
 * separated) are created through the KMS's own REST API, as a client would, and the ready file
 * is written: {@code kms_uri=kms://http@127.0.0.1:PORT/kms}, the key provider URI of HDFS.
 *
 * <p>Usage: {@code ClusterKms --dir DIR --ready-file FILE --port N [--keys ezkey]}
 */
public final class ClusterKms {

  private ClusterKms() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      opts.put(args[i], args[i + 1]);
    }
    Path dir = Paths.get(opts.get("--dir")).toAbsolutePath();
    Path readyFile = Paths.get(opts.get("--ready-file")).toAbsolutePath();
    int port = Integer.parseInt(opts.get("--port"));
    String keys = opts.getOrDefault("--keys", "ezkey");
    Files.createDirectories(dir);
    Files.deleteIfExists(readyFile);

    MiniKMS kms = new MiniKMS.Builder()
        .setKmsConfDir(dir.toFile())
        .setLog4jConfFile("log4j.properties")
        .setPort(port)
        .build();
    kms.start();
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        kms.stop();
      } finally {
        stopped.countDown();
      }
    }, "cluster-kms-shutdown"));

    String uri = "kms://http@127.0.0.1:" + port + "/kms";
    Configuration conf = new Configuration();
    KeyProvider provider = KeyProviderFactory.get(new URI(uri), conf);
    for (String key : keys.split(",")) {
      if (!key.isEmpty()) {
        provider.createKey(key, new KeyProvider.Options(conf));
      }
    }
    provider.flush();

    Path tmp = readyFile.resolveSibling(readyFile.getFileName() + ".tmp");
    try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
      w.write("kms_uri=" + uri + "\n");
      w.write("kms_url=" + kms.getKMSUrl() + "\n");
      w.write("keys=" + keys + "\n");
      w.write("pid=" + ProcessHandle.current().pid() + "\n");
    }
    Files.move(tmp, readyFile, StandardCopyOption.ATOMIC_MOVE);
    System.out.println("ClusterKms ready: " + uri + " (" + kms.getKMSUrl() + ")");
    stopped.await();
  }
}

import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.orc.OrcFile;

/**
 * scripts/bench: ORC's own stripe-level merge, OrcFile.mergeFiles from the orc-tools 1.9.5 uber
 * jar (the call `orc-tools merge` of ORC 2.x wraps; 1.9.5 has no `merge` command), on a local
 * directory: its non-hidden files, sorted by name, are cut between whole files into outputs of
 * about TARGET bytes (as hive-orc-compactor cuts), each written by one mergeFiles call.
 *
 *   java -cp orc-tools-1.9.5-uber.jar:<classes> OrcMerge INPUT_DIR OUTPUT_DIR TARGET_BYTES
 *
 * Prints one JSON line: files in and out, bytes in and out, files mergeFiles left out.
 */
public final class OrcMerge {
  public static void main(String[] args) throws Exception {
    File in = new File(args[0]);
    File out = new File(args[1]);
    long target = Long.parseLong(args[2]);
    out.mkdirs();
    File[] files = in.listFiles(f -> f.isFile() && !f.getName().startsWith(".")
        && !f.getName().startsWith("_") && f.length() > 0);
    Arrays.sort(files);
    Configuration conf = new Configuration();
    List<List<Path>> groups = new ArrayList<>();
    List<Path> cur = new ArrayList<>();
    long curBytes = 0, bytesIn = 0;
    for (File f : files) {
      cur.add(new Path(f.toURI()));
      curBytes += f.length();
      bytesIn += f.length();
      if (curBytes >= target) {
        groups.add(cur);
        cur = new ArrayList<>();
        curBytes = 0;
      }
    }
    if (!cur.isEmpty()) groups.add(cur);
    int merged = 0;
    long bytesOut = 0;
    for (int i = 0; i < groups.size(); i++) {
      Path o = new Path(new File(out, String.format("merged-%05d.orc", i)).toURI());
      List<Path> done = OrcFile.mergeFiles(o, OrcFile.writerOptions(conf), groups.get(i));
      merged += done.size();
      bytesOut += new File(o.toUri()).length();
    }
    System.out.printf("{\"files_in\": %d, \"bytes_read\": %d, \"files_out\": %d, \"bytes_written\": %d, "
        + "\"not_merged\": %d}%n", files.length, bytesIn, groups.size(), bytesOut, files.length - merged);
  }
}

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.orc.OrcFile;

/**
 * scripts/bench: ORC's own stripe-level merge, OrcFile.mergeFiles from orc-tools 1.9.5 (the call
 * `orc-tools merge` of ORC 2.x wraps; 1.9.5 has no `merge` command), on one directory: its
 * non-hidden files, sorted by name, are cut between whole files into outputs of about TARGET
 * bytes (as hive-orc-compactor cuts), each written by one mergeFiles call.
 *
 *   java -cp <orc-tools class path>:<classes> OrcMerge INPUT_DIR OUTPUT_DIR TARGET_BYTES
 *
 * The directories are Hadoop paths: a local directory (file:/...) with the uber jar alone, or
 * hdfs://... with the HDFS client of scripts/orc-tools on the class path, so the same merge runs
 * on local disk and on the cluster. Prints one JSON line: files in and out, bytes in and out,
 * files mergeFiles left out.
 */
public final class OrcMerge {
  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    Path in = new Path(args[0]);
    Path out = new Path(args[1]);
    long target = Long.parseLong(args[2]);
    FileSystem fs = in.getFileSystem(conf);
    FileSystem outFs = out.getFileSystem(conf);
    outFs.mkdirs(out);
    FileStatus[] files = fs.listStatus(in, p -> !p.getName().startsWith(".")
        && !p.getName().startsWith("_"));
    files = Arrays.stream(files).filter(f -> f.isFile() && f.getLen() > 0)
        .sorted(Comparator.comparing(f -> f.getPath().getName())).toArray(FileStatus[]::new);
    List<List<Path>> groups = new ArrayList<>();
    List<Path> cur = new ArrayList<>();
    long curBytes = 0, bytesIn = 0;
    for (FileStatus f : files) {
      cur.add(f.getPath());
      curBytes += f.getLen();
      bytesIn += f.getLen();
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
      Path o = new Path(out, String.format("merged-%05d.orc", i));
      List<Path> done = OrcFile.mergeFiles(o, OrcFile.writerOptions(conf).fileSystem(outFs),
          groups.get(i));
      merged += done.size();
      bytesOut += outFs.getFileStatus(o).getLen();
    }
    System.out.printf("{\"files_in\": %d, \"bytes_read\": %d, \"files_out\": %d, \"bytes_written\": %d, "
        + "\"not_merged\": %d}%n", files.length, bytesIn, groups.size(), bytesOut, files.length - merged);
  }
}

// Prints every row of ORC files as the reference Java reader hands them to Hive: each column
// of the row batch by its ColumnVector.stringifyValue, joined by '|'. Unlike orc-tools' `data`
// (which prints a union by its value alone), this tells a null union row ("null") from a
// union row holding a null ({"tag": 0, "value": null}).
//
//   java -cp "$(scripts/orc-tools --classpath)" scripts/harness/orc-tools/VectorRows.java \
//     [--columns=I,J] FILE...
//
// --columns prints only those top-level columns (0-based), for values of other columns that
// may hold a '|' or a line break.
// Prints "== FILE" before each file's rows.

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
// The uber jar shades hive-storage-api under org.apache.orc.storage.
import org.apache.orc.storage.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;

public class VectorRows {
  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    StringBuilder out = new StringBuilder();
    int[] only = null;
    int first = 0;
    if (args.length > 0 && args[0].startsWith("--columns=")) {
      only = java.util.Arrays.stream(args[0].substring("--columns=".length()).split(","))
          .mapToInt(Integer::parseInt).toArray();
      first = 1;
    }
    for (String file : java.util.Arrays.copyOfRange(args, first, args.length)) {
      out.setLength(0);
      out.append("== ").append(file).append('\n');
      Reader reader = OrcFile.createReader(new Path(file), OrcFile.readerOptions(conf));
      VectorizedRowBatch batch = reader.getSchema().createRowBatch();
      try (RecordReader rr = reader.rows()) {
        while (rr.nextBatch(batch)) {
          for (int r = 0; r < batch.size; r++) {
            int[] columns = only != null ? only
                : java.util.stream.IntStream.range(0, batch.numCols).toArray();
            for (int i = 0; i < columns.length; i++) {
              out.append(i == 0 ? "" : "|");
              batch.cols[columns[i]].stringifyValue(out, r);
            }
            out.append('\n');
          }
        }
      }
      System.out.print(out);
    }
  }
}

// Checks an ORC file's row index positions with the reference Java reader: reads every row in
// order, then seeks (RecordReader.seekToRow, which jumps to the row group through the index
// positions of every stream and skips within it) to rows at, just after and just before each
// row group boundary, and compares what it reads there with the sequential rows.
//
//   java -cp "$(scripts/orc-tools --classpath)" scripts/harness/orc-tools/SeekCheck.java FILE
//
// Prints "ok <rows> rows, <seeks> seeks" or the first mismatch, and exits non-zero on failure.

import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
// The uber jar shades hive-storage-api under org.apache.orc.storage.
import org.apache.orc.storage.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.storage.ql.io.sarg.PredicateLeaf;
import org.apache.orc.storage.ql.io.sarg.SearchArgument;
import org.apache.orc.storage.ql.io.sarg.SearchArgumentFactory;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;

public class SeekCheck {
  static String row(VectorizedRowBatch batch, int r) {
    StringBuilder sb = new StringBuilder();
    for (int c = 0; c < batch.numCols; c++) {
      sb.append(c == 0 ? "" : "|");
      batch.cols[c].stringifyValue(sb, r);
    }
    return sb.toString();
  }

  public static void main(String[] args) throws Exception {
    Reader reader = OrcFile.createReader(new Path(args[0]),
        OrcFile.readerOptions(new Configuration()));
    List<String> rows = new ArrayList<>();
    VectorizedRowBatch batch = reader.getSchema().createRowBatch();
    try (RecordReader rr = reader.rows()) {
      while (rr.nextBatch(batch)) {
        for (int r = 0; r < batch.size; r++) {
          rows.add(row(batch, r));
        }
      }
    }
    long stride = reader.getRowIndexStride();
    TreeSet<Long> targets = new TreeSet<>();
    // Row group boundaries restart in each stripe.
    long stripeStart = 0;
    for (var stripe : reader.getStripes()) {
      for (long g = 0; g < stripe.getNumberOfRows(); g += stride) {
        for (long d : new long[] {-1, 0, 1, 7}) {
          long t = stripeStart + g + d;
          if (t >= 0 && t < rows.size()) {
            targets.add(t);
          }
        }
      }
      stripeStart += stripe.getNumberOfRows();
    }
    // ORC 1.9's seekToRow fails on files with bloom filters unless a search argument is
    // given (its bloom column list stays null): give one that keeps every row group.
    String first = reader.getSchema().getFieldNames().get(0);
    PredicateLeaf.Type type = PredicateLeaf.Type.BOOLEAN;
    SearchArgument all = SearchArgumentFactory.newBuilder()
        .startOr().isNull(first, type).startNot().isNull(first, type).end().end().build();
    int seeks = 0;
    try (RecordReader rr = reader.rows(reader.options().searchArgument(all, new String[] {first}))) {
      for (long t : targets.descendingSet()) {
        rr.seekToRow(t);
        batch.reset();
        if (!rr.nextBatch(batch) || batch.size == 0) {
          System.out.println("no rows after seeking to row " + t);
          System.exit(1);
        }
        for (int r = 0; r < batch.size; r++) {
          String want = rows.get((int) t + r);
          String got = row(batch, r);
          if (!want.equals(got)) {
            System.out.println("row " + (t + r) + " after seeking to " + t + ": read " + got
                + ", expected " + want);
            System.exit(1);
          }
        }
        seeks++;
      }
    }
    System.out.println("ok " + rows.size() + " rows, " + seeks + " seeks");
  }
}

// The rows of some ORC files written again by the reference Java writer (ORC 1.9.5) into one
// file, encoded like a template file (schema, codec, compression block size, row index stride),
// with bloom filters on the named columns: what our re-encode's statistics are compared with.
//
//   java -cp "$(scripts/orc-tools --classpath)" scripts/harness/orc-tools/JavaRewrite.java \
//       OUT TEMPLATE BLOOM_COLUMNS IN...
//
// BLOOM_COLUMNS is comma-separated column names, or "-" for none. Prints the rows written.

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
// The uber jar shades hive-storage-api under org.apache.orc.storage.
import org.apache.orc.storage.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;
import org.apache.orc.Writer;

public class JavaRewrite {
  public static void main(String[] args) throws Exception {
    if (args.length < 4) {
      System.err.println("usage: JavaRewrite OUT TEMPLATE BLOOM_COLUMNS IN...");
      System.exit(2);
    }
    Configuration conf = new Configuration();
    Reader template = OrcFile.createReader(new Path(args[1]), OrcFile.readerOptions(conf));
    OrcFile.WriterOptions options = OrcFile.writerOptions(conf)
        .setSchema(template.getSchema())
        .compress(template.getCompressionKind())
        .bufferSize(template.getCompressionSize())
        .rowIndexStride(template.getRowIndexStride())
        .stripeSize(64L << 20)
        .overwrite(true);
    if (!args[2].equals("-")) options.bloomFilterColumns(args[2]);
    long rows = 0;
    try (Writer writer = OrcFile.createWriter(new Path(args[0]), options)) {
      for (int i = 3; i < args.length; i++) {
        Reader in = OrcFile.createReader(new Path(args[i]), OrcFile.readerOptions(conf));
        VectorizedRowBatch batch = in.getSchema().createRowBatch();
        try (RecordReader reader = in.rows()) {
          while (reader.nextBatch(batch)) {
            writer.addRowBatch(batch);
            rows += batch.size;
          }
        }
      }
    }
    System.out.println(rows);
  }
}

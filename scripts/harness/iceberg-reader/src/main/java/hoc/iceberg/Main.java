package hoc.iceberg;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.GetTableRequest;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.hive.HiveCatalog;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;
import org.apache.orc.TypeDescription;
import org.apache.orc.storage.ql.exec.vector.BytesColumnVector;
import org.apache.orc.storage.ql.exec.vector.ColumnVector;
import org.apache.orc.storage.ql.exec.vector.DecimalColumnVector;
import org.apache.orc.storage.ql.exec.vector.DoubleColumnVector;
import org.apache.orc.storage.ql.exec.vector.ListColumnVector;
import org.apache.orc.storage.ql.exec.vector.LongColumnVector;
import org.apache.orc.storage.ql.exec.vector.MapColumnVector;
import org.apache.orc.storage.ql.exec.vector.StructColumnVector;
import org.apache.orc.storage.ql.exec.vector.TimestampColumnVector;
import org.apache.orc.storage.ql.exec.vector.VectorizedRowBatch;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.transport.TSocket;

/**
 * Compares a Hive ORC table with the Iceberg table made from it, row for row.
 *
 * <pre>
 * Main --metastore thrift://h:p --hive db.t__hive_backup --iceberg db.t [--where col=value|col&lt;v|col&gt;v|col=null]...
 * </pre>
 *
 * The Iceberg side is loaded the way engines load it, through Iceberg's HiveCatalog with the
 * metastore as its {@code uri}, and read by Iceberg's generic reader; the Hive side by the ORC reader from the Hive table's partitions, columns
 * matched by name (or position for _colN files), partition values appended
 * (__HIVE_DEFAULT_PARTITION__ is null). Both become canonical strings per row; the two sorted
 * lists must be equal. Prints one JSON object: the metadata file HiveCatalog loaded, row counts,
 * equality, the files Iceberg's scan planned for the filter and for no filter, and a few rows
 * found on one side only.
 */
public final class Main {
  private static final String DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__";

  record Filter(String column, char op, String value) {}

  public static void main(String[] args) throws Exception {
    String uri = null, hive = null, iceberg = null;
    List<Filter> filters = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--metastore" -> uri = args[++i];
        case "--hive" -> hive = args[++i];
        case "--iceberg" -> iceberg = args[++i];
        case "--where" -> filters.add(parseFilter(args[++i]));
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    java.net.URI u = java.net.URI.create(uri);
    TSocket socket = new TSocket(u.getHost(), u.getPort());
    socket.open();
    ThriftHiveMetastore.Client hms = new ThriftHiveMetastore.Client(new TBinaryProtocol(socket));
    Configuration conf = new Configuration();

    // The catalog's uri sets hive.metastore.uris only; Hive 3's client prefers
    // metastore.thrift.uris, which a hive-site.xml on the class path (HADOOP_CONF_DIR) may name
    // for another metastore.
    conf.set("metastore.thrift.uris", uri);
    HiveCatalog catalog = new HiveCatalog();
    catalog.setConf(conf);
    catalog.initialize("hive", Map.of(CatalogProperties.URI, uri));
    org.apache.iceberg.Table table = catalog.loadTable(TableIdentifier.parse(iceberg));
    String metadata =
        ((HasTableOperations) table).operations().current().metadataFileLocation();

    Expression expr = Expressions.alwaysTrue();
    for (Filter f : filters) {
      expr = Expressions.and(expr, toExpression(table.schema(), f));
    }
    int filesTotal = count(table.newScan().planFiles());
    int filesPlanned = count(table.newScan().filter(expr).planFiles());

    List<String> icebergRows = new ArrayList<>();
    List<Types.NestedField> fields = table.schema().columns();
    List<String> columnNames = new ArrayList<>();
    for (Types.NestedField f : fields) {
      columnNames.add(f.name());
    }
    try (CloseableIterable<Record> rows = IcebergGenerics.read(table).where(expr).build()) {
      for (Record r : rows) {
        List<String> vals = new ArrayList<>();
        for (int c = 0; c < fields.size(); c++) {
          vals.add(canonIceberg(r.get(c), fields.get(c).type()));
        }
        // Iceberg's generic reader filters rows by its own residual rules (null sorts before
        // every value); SQL's rules apply here, on both sides, so that the comparison shows
        // whether a skipped file held a matching row.
        if (matches(columnNames, vals, filters)) {
          icebergRows.add(String.join("|", vals));
        }
      }
    }

    List<String> hiveRows = new ArrayList<>();
    if (hive != null) {
      String[] ht = hive.split("\\.");
      Table t = table(hms, ht[0], ht[1]);
      readHive(hms, conf, t, filters, hiveRows);
    }
    socket.close();
    catalog.close();

    Collections.sort(icebergRows);
    Collections.sort(hiveRows);
    List<String> onlyHive = difference(hiveRows, icebergRows);
    List<String> onlyIceberg = difference(icebergRows, hiveRows);
    StringBuilder out = new StringBuilder("{");
    out.append("\"metadata_location\":\"").append(metadata).append('"');
    out.append(",\"iceberg_rows\":").append(icebergRows.size());
    out.append(",\"hive_rows\":").append(hiveRows.size());
    out.append(",\"equal\":").append(hive != null && icebergRows.equals(hiveRows));
    out.append(",\"files_total\":").append(filesTotal);
    out.append(",\"files_planned\":").append(filesPlanned);
    out.append(",\"only_in_hive\":").append(jsonList(onlyHive));
    out.append(",\"only_in_iceberg\":").append(jsonList(onlyIceberg));
    out.append("}");
    System.out.println(out);
  }

  private static Table table(ThriftHiveMetastore.Client hms, String db, String name)
      throws Exception {
    GetTableRequest req = new GetTableRequest(db, name);
    req.setCatName("hive");
    return hms.get_table_req(req).getTable();
  }

  private static Filter parseFilter(String s) {
    for (char op : new char[] {'=', '<', '>'}) {
      int i = s.indexOf(op);
      if (i > 0) {
        return new Filter(s.substring(0, i), op, s.substring(i + 1));
      }
    }
    throw new IllegalArgumentException("bad filter " + s);
  }

  private static Expression toExpression(org.apache.iceberg.Schema schema, Filter f) {
    if (f.value().equals("null")) {
      return Expressions.isNull(f.column());
    }
    Type type = schema.findType(f.column());
    Object v = switch (type.typeId()) {
      case INTEGER -> Integer.parseInt(f.value());
      case LONG -> Long.parseLong(f.value());
      case DOUBLE -> Double.parseDouble(f.value());
      case FLOAT -> Float.parseFloat(f.value());
      case BOOLEAN -> Boolean.parseBoolean(f.value());
      case DECIMAL -> new BigDecimal(f.value());
      default -> f.value(); // strings, and dates/timestamps Iceberg parses from text
    };
    return switch (f.op()) {
      case '=' -> Expressions.equal(f.column(), v);
      case '<' -> Expressions.lessThan(f.column(), v);
      default -> Expressions.greaterThan(f.column(), v);
    };
  }

  private static int count(CloseableIterable<FileScanTask> tasks) throws Exception {
    int n = 0;
    try (tasks) {
      for (FileScanTask ignored : tasks) {
        n++;
      }
    }
    return n;
  }

  private static List<String> difference(List<String> a, List<String> b) {
    Map<String, Integer> counts = new HashMap<>();
    for (String s : b) {
      counts.merge(s, 1, Integer::sum);
    }
    List<String> out = new ArrayList<>();
    for (String s : a) {
      Integer c = counts.get(s);
      if (c == null || c == 0) {
        if (out.size() < 3) {
          out.add(s);
        }
      } else {
        counts.put(s, c - 1);
      }
    }
    return out;
  }

  private static String jsonList(List<String> l) {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < l.size(); i++) {
      if (i > 0) {
        sb.append(',');
      }
      sb.append('"');
      for (char c : l.get(i).toCharArray()) {
        if (c == '"' || c == '\\') {
          sb.append('\\').append(c);
        } else if (c < 0x20) {
          sb.append(String.format("\\u%04x", (int) c));
        } else {
          sb.append(c);
        }
      }
      sb.append('"');
    }
    return sb.append(']').toString();
  }

  // ---- canonical values ----

  private static String hex(byte[] b, int off, int len) {
    StringBuilder sb = new StringBuilder("0x");
    for (int i = off; i < off + len; i++) {
      sb.append(String.format("%02x", b[i]));
    }
    return sb.toString();
  }

  private static String canonIceberg(Object v, Type type) {
    if (v == null) {
      return "null";
    }
    switch (type.typeId()) {
      case DECIMAL:
        return ((BigDecimal) v).setScale(((Types.DecimalType) type).scale()).toPlainString();
      case BINARY: {
        ByteBuffer bb = ((ByteBuffer) v).duplicate();
        byte[] b = new byte[bb.remaining()];
        bb.get(b);
        return hex(b, 0, b.length);
      }
      case LIST: {
        Type e = type.asListType().elementType();
        List<String> out = new ArrayList<>();
        for (Object o : (List<?>) v) {
          out.add(canonIceberg(o, e));
        }
        return "[" + String.join(",", out) + "]";
      }
      case MAP: {
        Types.MapType m = type.asMapType();
        TreeMap<String, String> out = new TreeMap<>();
        for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
          out.put(canonIceberg(e.getKey(), m.keyType()), canonIceberg(e.getValue(), m.valueType()));
        }
        return out.toString();
      }
      case STRUCT: {
        Record r = (Record) v;
        List<Types.NestedField> fs = type.asStructType().fields();
        List<String> out = new ArrayList<>();
        for (int i = 0; i < fs.size(); i++) {
          out.add(canonIceberg(r.get(i), fs.get(i).type()));
        }
        return "{" + String.join(",", out) + "}";
      }
      default:
        return v.toString();
    }
  }

  private static String canonOrc(ColumnVector cv, int row, TypeDescription t, String hiveType) {
    if (cv.isRepeating) {
      row = 0;
    }
    if (!cv.noNulls && cv.isNull[row]) {
      return "null";
    }
    switch (t.getCategory()) {
      case BOOLEAN:
        return ((LongColumnVector) cv).vector[row] != 0 ? "true" : "false";
      case BYTE:
      case SHORT:
      case INT:
      case LONG:
        return Long.toString(((LongColumnVector) cv).vector[row]);
      case FLOAT:
        return Float.toString((float) ((DoubleColumnVector) cv).vector[row]);
      case DOUBLE:
        return Double.toString(((DoubleColumnVector) cv).vector[row]);
      case STRING:
      case VARCHAR:
      case CHAR: {
        BytesColumnVector b = (BytesColumnVector) cv;
        return new String(b.vector[row], b.start[row], b.length[row], StandardCharsets.UTF_8);
      }
      case BINARY: {
        BytesColumnVector b = (BytesColumnVector) cv;
        return hex(b.vector[row], b.start[row], b.length[row]);
      }
      case DATE:
        return LocalDate.ofEpochDay(((LongColumnVector) cv).vector[row]).toString();
      case TIMESTAMP:
        return ((TimestampColumnVector) cv).asScratchTimestamp(row).toLocalDateTime().toString();
      case DECIMAL:
        return ((DecimalColumnVector) cv).vector[row].getHiveDecimal().bigDecimalValue()
            .setScale(t.getScale()).toPlainString();
      case LIST: {
        ListColumnVector l = (ListColumnVector) cv;
        List<String> out = new ArrayList<>();
        for (long i = l.offsets[row]; i < l.offsets[row] + l.lengths[row]; i++) {
          out.add(canonOrc(l.child, (int) i, t.getChildren().get(0), null));
        }
        return "[" + String.join(",", out) + "]";
      }
      case MAP: {
        MapColumnVector m = (MapColumnVector) cv;
        TreeMap<String, String> out = new TreeMap<>();
        for (long i = m.offsets[row]; i < m.offsets[row] + m.lengths[row]; i++) {
          out.put(canonOrc(m.keys, (int) i, t.getChildren().get(0), null),
              canonOrc(m.values, (int) i, t.getChildren().get(1), null));
        }
        return out.toString();
      }
      case STRUCT: {
        StructColumnVector s = (StructColumnVector) cv;
        List<String> out = new ArrayList<>();
        for (int i = 0; i < s.fields.length; i++) {
          out.add(canonOrc(s.fields[i], row, t.getChildren().get(i), null));
        }
        return "{" + String.join(",", out) + "}";
      }
      default:
        throw new IllegalStateException("unsupported ORC type " + t);
    }
  }

  // ---- the Hive side ----

  private static void readHive(ThriftHiveMetastore.Client hms, Configuration conf, Table t,
      List<Filter> filters, List<String> out) throws Exception {
    List<FieldSchema> cols = t.getSd().getCols();
    List<FieldSchema> keys = t.getPartitionKeys();
    List<String> names = new ArrayList<>();
    for (FieldSchema c : cols) {
      names.add(c.getName());
    }
    for (FieldSchema k : keys) {
      names.add(k.getName());
    }
    List<String[]> dirs = new ArrayList<>(); // location, then partition values
    if (keys.isEmpty()) {
      dirs.add(new String[] {t.getSd().getLocation()});
    } else {
      for (Partition p : hms.get_partitions(t.getDbName(), t.getTableName(), (short) -1)) {
        String[] d = new String[1 + p.getValues().size()];
        d[0] = p.getSd().getLocation();
        for (int i = 0; i < p.getValues().size(); i++) {
          String v = p.getValues().get(i);
          d[i + 1] = v.equals(DEFAULT_PARTITION) ? null : v;
        }
        dirs.add(d);
      }
    }
    for (String[] d : dirs) {
      Path dir = new Path(d[0]);
      FileSystem fs = dir.getFileSystem(conf);
      for (FileStatus st : fs.listStatus(dir)) {
        String n = st.getPath().getName();
        if (st.isDirectory() || n.startsWith(".") || n.startsWith("_") || st.getLen() == 0) {
          continue;
        }
        Reader reader = OrcFile.createReader(st.getPath(), OrcFile.readerOptions(conf));
        TypeDescription schema = reader.getSchema();
        List<String> fileNames = schema.getFieldNames();
        boolean positional = !fileNames.isEmpty() && fileNames.get(0).equals("_col0");
        int[] at = new int[cols.size()];
        for (int c = 0; c < cols.size(); c++) {
          at[c] = -1;
          for (int f = 0; f < fileNames.size(); f++) {
            boolean match = positional ? f == c
                : fileNames.get(f).equalsIgnoreCase(cols.get(c).getName());
            if (match) {
              at[c] = f;
            }
          }
        }
        try (RecordReader rows = reader.rows()) {
          VectorizedRowBatch batch = schema.createRowBatch();
          while (rows.nextBatch(batch)) {
            for (int r = 0; r < batch.size; r++) {
              List<String> vals = new ArrayList<>();
              for (int c = 0; c < cols.size(); c++) {
                vals.add(at[c] < 0 ? "null"
                    : canonOrc(batch.cols[at[c]], r, schema.getChildren().get(at[c]),
                        cols.get(c).getType()));
              }
              for (int k = 0; k < keys.size(); k++) {
                vals.add(d[k + 1] == null ? "null" : d[k + 1]);
              }
              if (matches(names, vals, filters)) {
                out.add(String.join("|", vals));
              }
            }
          }
        }
      }
    }
  }

  private static boolean matches(List<String> names, List<String> vals, List<Filter> filters) {
    for (Filter f : filters) {
      int i = -1;
      for (int n = 0; n < names.size(); n++) {
        if (names.get(n).equalsIgnoreCase(f.column())) {
          i = n;
        }
      }
      String v = vals.get(i);
      if (f.value().equals("null")) {
        if (!v.equals("null")) {
          return false;
        }
        continue;
      }
      if (v.equals("null")) {
        return false;
      }
      int cmp;
      try {
        cmp = new BigDecimal(v).compareTo(new BigDecimal(f.value()));
      } catch (NumberFormatException e) {
        cmp = v.compareTo(f.value());
      }
      boolean ok = switch (f.op()) {
        case '=' -> cmp == 0;
        case '<' -> cmp < 0;
        default -> cmp > 0;
      };
      if (!ok) {
        return false;
      }
    }
    return true;
  }

  private Main() {}

  static {
    Locale.setDefault(Locale.ROOT);
  }
}

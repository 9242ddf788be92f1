#!/usr/bin/env bash
# Regenerates the small ORC fixtures used by the unit tests in src/orc/ with the reference Java
# writer (orc-tools 1.9.5, resolved by scripts/harness/orc-tools/pom.xml). The fixtures are
# committed so unit tests run without Java; tests/it/orc_merge.rs generates its own inputs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
jar="$HOME/.m2/repository/org/apache/orc/orc-tools/1.9.5/orc-tools-1.9.5-uber.jar"
[ -f "$jar" ] || mvn -q -B -f "$repo/scripts/harness/orc-tools/pom.xml" dependency:resolve
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/all.json" <<'JSON'
{"b":true,"t":1,"si":2,"i":3,"l":4,"f":1.5,"d":2.25,"s":"héllo","vc":"abc","c":"ab","bin":"010203","dec":"12345.6789","dec2":1.25,"dt":"1960-02-29","ts":"1965-01-01 00:00:01","tsl":"2020-01-01 10:00:00.123456","lst":[1,2,null],"m":{"a":1,"b":null},"st":{"x":1,"y":"q"},"u":{"tag":1,"value":"zz"}}
{"b":null,"t":null,"si":null,"i":null,"l":null,"f":null,"d":null,"s":null,"vc":null,"c":null,"bin":null,"dec":null,"dec2":null,"dt":null,"ts":null,"tsl":null,"lst":null,"m":null,"st":null,"u":null}
{"b":false,"t":-1,"si":-2,"i":-3,"l":-4,"f":-1.5,"d":-2.25,"s":"","vc":"","c":"","bin":"","dec":"-0.0000000001","dec2":-99999999.99,"dt":"2024-12-31","ts":"2030-06-01 12:34:56.789001","tsl":"1999-01-01 00:00:00","lst":[],"m":{},"st":{"x":null,"y":null},"u":{"tag":0,"value":5}}
JSON
schema='struct<b:boolean,t:tinyint,si:smallint,i:int,l:bigint,f:float,d:double,s:string,vc:varchar(10),c:char(5),bin:binary,dec:decimal(38,10),dec2:decimal(10,2),dt:date,ts:timestamp,tsl:timestamp with local time zone,lst:array<int>,m:map<string,int>,st:struct<x:int,y:string>,u:uniontype<int,string>>'
java -jar "$jar" --define orc.compress=LZ4 convert -t "yyyy-MM-dd HH:mm:ss[.SSSSSS]" -O \
  -s "$schema" -o "$here/all_types_lz4.orc" "$tmp/all.json"

python3 -c '
for i in range(6000):
    print("{\"a\": %d, \"s\": \"s%d\"}" % (i, i % 50))' > "$tmp/multi.json"
java -jar "$jar" --define orc.compress=ZSTD --define orc.stripe.size=8192 \
  --define orc.rows.between.memory.checks=200 convert -O -s 'struct<a:bigint,s:string>' \
  -o "$here/multi_stripe_zstd.orc" "$tmp/multi.json"
# Plain timestamps written in America/Los_Angeles (the zone the writer records), across the
# years ORC holds: the stored seconds must survive a re-encode under that zone.
cat > "$tmp/la.json" <<'JSON'
{"id":1,"ts":"0001-01-01 00:00:00.000000000"}
{"id":2,"ts":"1900-01-01 00:00:00.000000001"}
{"id":3,"ts":"1969-12-31 23:59:58.500000000"}
{"id":4,"ts":"2100-07-01 12:00:00.000000000"}
{"id":5,"ts":null}
{"id":6,"ts":"9999-12-31 23:59:59.999999999"}
{"id":7,"ts":"2024-03-10 02:30:00.000000000"}
JSON
java -Duser.timezone=America/Los_Angeles -jar "$jar" --define orc.compress=ZLIB convert \
  -t "yyyy-MM-dd HH:mm:ss.SSSSSSSSS" -O -s 'struct<id:bigint,ts:timestamp>' \
  -o "$here/la_timestamps_zlib.orc" "$tmp/la.json"
rm -f "$here"/.*.crc  # Hadoop local FS checksum side files

# ORC C++ through pyarrow: a pre-1970 time with a fraction of a second, stored with negative
# nanoseconds (which ORC Java refuses to read).
"$repo/scripts/pyorc" --install
"$repo/.cluster/cache/venv-pyarrow/bin/python" -c '
import pyarrow as pa, pyarrow.orc as orc, sys
ts = pa.array([1_000_000_000, -500_000_000, None], pa.timestamp("ns"))
orc.write_table(pa.table({"ts": ts}), sys.argv[1], compression="uncompressed")
' "$here/cpp_pre1970_fraction.orc"
# The same, a day and more before 1970 (which a re-encode heals), zstd-compressed, 40 times:
# 1900-01-01 00:00:00.5, 1950-06-14 02:00:00.123456789, 1969-12-29 23:59:59.25, 2000-01-01
# and a null.
"$repo/.cluster/cache/venv-pyarrow/bin/python" -c '
import pyarrow as pa, pyarrow.orc as orc, sys
ns = [-2208988799_500_000_000, -616975199_876_543_211, -172800_750_000_000, 946684800_000_000_000, None]
ts = pa.array(ns * 40, pa.timestamp("ns"))
ids = pa.array(range(len(ns) * 40), pa.int64())
orc.write_table(pa.table({"id": ids, "ts": ts}), sys.argv[1], compression="zstd")
' "$here/cpp_before_1970_zstd.orc"

#!/usr/bin/env python3
"""The driver behind scripts/bench (run that, not this): datasets, the four ways to compact
them, measurements and the report. Standard library only.

For each dataset, one after another, on the same files:
  raw copy     bench-rawcopy (hdfs-native, read every byte and write it back)
  ours         hive-orc-compactor compact (release build, default verification: --verify full)
  ours tail    the same after a rollback (not timed), with --verify tail
  orc merge    OrcFile.mergeFiles (ORC 1.9.5) on a local-disk copy of the same files, and the
               same merge on the files in HDFS (outputs written to HDFS), like for like
  spark        pyspark 3.5 local[2]: read, coalesce(n), write staging, count check,
               INSERT OVERWRITE through the metastore (or a directory swap with --spark-mode path)
The re-encode sets (REENCODE_SETS) run a flow of their own instead, on one partition of tiny
stripes: ours with --stripes rewrite, once per --threads count (1 and 2 unless told), Apache
ORC C++ (pyarrow) decoding and re-encoding local copies of the same files into one file, the
Spark rewrite; then each output (ours: the first count's), copied to local disk, is read back
(pyarrow whole and one column, a Spark scan decoding every column) and weighed.
Each command runs under /usr/bin/time -v while a sampler follows its process tree in /proc
(JVMs started by Python are counted), and the NameNode's JMX, the DataNode's byte counters and
the metastore's audit log are read before and after.
"""
import argparse
import statistics
import datetime
import getpass
import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
STATE = os.environ.get("CLUSTER_DIR", os.path.join(ROOT, ".cluster", "bench"))
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")
JAVA_HOME = os.environ.get("BENCH_JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")
ORC_UBER = os.path.expanduser(
    "~/.m2/repository/org/apache/orc/orc-tools/1.9.5/orc-tools-1.9.5-uber.jar")
PARTITION = "dt=2026-11-01"
TARGET = 256 << 20

# name -> (what, codec for Spark's writer)
DATASETS = {
    "bench_a": ("A: 1,000 x 1 MiB, zlib", "zlib"),
    "bench_b": ("B: 10,000 x 64 KiB, snappy", "snappy"),
    "bench_c": ("C: 200 x 32 MiB, zstd", "zstd"),
    "bench_wide": ("W: 400 x 2 MiB, 200 cols, zlib", "zlib"),
    "bench_big": ("BIG: 640 x 16 MiB = 10 GiB, zlib", "zlib"),
    # Many tiny files, and memory against the file count (the same 16 KiB files of B's table).
    "bench_t1k": ("T1k: 1,000 x 16 KiB, snappy", "snappy"),
    "bench_t10k": ("T10k: 10,000 x 16 KiB, snappy", "snappy"),
    "bench_t100k": ("T100k: 100,000 x 16 KiB, snappy", "snappy"),
    "bench_w2k": ("W2k: 2,000 x 256 KiB, 200 cols, zlib", "zlib"),
    "bench_r": ("R: 10,000 x 60 rows, 11 cols, zlib", "zlib"),
    "bench_rbig": ("RBIG: 2,500 x 2,500 rows, 11 cols, zlib", "zlib"),
    "bench_rts": ("RTS: R with an SCD2 valid_to (9999-12-31 23:59:59.999999)", "zlib"),
    "bench_rcpp": ("RC++: R's files written again by ORC C++ (pyarrow)", "zlib"),
    "bench_rbigts": ("RBIGTS: RBIG with an SCD2 valid_to (9999-12-31 23:59:59.999999)", "zlib"),
    "bench_rbigcpp": ("RBIGC++: RBIG's files written again by ORC C++ (pyarrow)", "zlib"),
}
# Sets for `compact --stripes rewrite` (run_reencode), and whether Spark's rewrite runs on them
# whatever --spark-sets says: R is the comparison the re-encode is judged by; RBIG (output of
# several 64 MiB stripes) is for our memory, and Spark adds minutes there without a target.
REENCODE_SETS = {"bench_r": True, "bench_rbig": False, "bench_rts": True, "bench_rcpp": True,
                 "bench_rbigts": False, "bench_rbigcpp": False}
# Sets pyarrow cannot read (arrow's nanosecond timestamps end in 2262): no ORC C++ phase, and
# their outputs are read back by Spark only.
NOT_FOR_PYARROW = {"bench_rts", "bench_rbigts"}
# Sets whose files the Java generator writes and ORC C++ then writes again, file for file, on
# HDFS, before anything is timed: inputs from ORC C++ (pyarrow_orc.py rewrite-each).
FROM_CPP = {"bench_rcpp", "bench_rbigcpp"}
STRIPE_SIZE = 64 << 20
# The column the one-column read takes (a string: dictionary or direct, per stripe).
READ_COLUMN = "name"
# Sets of many partitions of tiny files, timed per command over the whole table instead of
# `compact` on one partition: what costs there is the partition count (memory, metastore pages,
# one listing each) and one footer per file.
PARTITION_STEPS = {
    "analyze": ["analyze"],
    "compact --all --dry-run": ["compact", "--all", "--dry-run", "--min-age", "0s",
                                "--parallel", "4"],
    "iceberg check": ["iceberg", "check"],
    "iceberg migrate": ["iceberg", "migrate"],
    "iceberg revert": ["iceberg", "revert"],
}
# Batched compaction (#45) on bench_ice's data: the whole table compacted for real with one
# partition per batch, rolled back partition by partition (not timed), compacted again with the
# default batch size, then once more, when every partition has nothing to do.
BATCH_STEPS = {
    "compact --all --batch-size 1": ["compact", "--all", "--min-age", "0s", "--parallel", "4",
                                     "--batch-size", "1"],
    "compact --all": ["compact", "--all", "--min-age", "0s", "--parallel", "4"],
    "compact --all, nothing to do": ["compact", "--all", "--min-age", "0s", "--parallel", "4"],
}
PARTITION_STEPS.update(BATCH_STEPS)
PARTITION_SETS = {
    "bench_ice": ("analyze", "compact --all --dry-run", "iceberg check", "iceberg migrate",
                  "iceberg revert"),
    "bench_p100k": ("analyze", "compact --all --dry-run"),
    "bench_batch": tuple(BATCH_STEPS),
}
# Sets made by another set's generator: (fixture set, table name).
GENERATED_AS = {"bench_batch": ("bench_ice", "bench_ice")}
# Sets of the memory-against-file-count table: one schema and file size, only the count varies.
# Iceberg's Spark runtime for Spark 3.5, pinned; scripts/bench fetches it into ~/.m2.
ICEBERG_SPARK_JAR = os.path.expanduser(
    "~/.m2/repository/org/apache/iceberg/iceberg-spark-runtime-3.5_2.12/1.7.1/"
    "iceberg-spark-runtime-3.5_2.12-1.7.1.jar")
MEMORY_SETS = ("bench_t1k", "bench_t10k", "bench_t100k")
# DataNode -> NameNode protocol methods: not the client's calls.
DN_METHODS = {"SendHeartbeat", "BlockReceivedAndDeleted", "BlockReport", "CacheReport",
              "RegisterDatanode", "VersionRequest", "SendLifeline", "ErrorReport",
              "ReportBadBlocks", "CommitBlockSynchronization"}


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------- the cluster

class Cluster:
    def __init__(self):
        self.hdfs = os.environ["HDFS_URL"]
        self.nn_port = self.hdfs.rsplit(":", 1)[1]
        web = os.environ["CLUSTER_WEBHDFS_URL"]
        self.http = web.split("/webhdfs")[0]
        self.webhdfs = web
        self.hms_log = os.path.join(STATE, "logs", "hms.log")
        self.last_read = 0.0

    def jmx_fresh(self, qry):
        # Hadoop's JMX values are a cache refreshed on read at most every metrics period (10 s
        # by default): wait until the last read is that old, so this one sees every call.
        wait = self.last_read + 10.5 - time.time()
        if wait > 0:
            time.sleep(wait)
        beans = self.jmx(qry)
        self.last_read = time.time()
        return beans

    def jmx(self, qry):
        with urllib.request.urlopen(f"{self.http}/jmx?qry={qry}", timeout=30) as r:
            return json.load(r)["beans"]

    def counters(self):
        rpc = {}
        for b in self.jmx_fresh(
                f"Hadoop:service=NameNode,name=RpcDetailedActivityForPort{self.nn_port}"):
            for k, v in b.items():
                if k.endswith("NumOps") and not k.startswith(("Deferred", "Overall")):
                    rpc[k[:-6]] = v
        dn_read = dn_written = 0
        for b in self.jmx("Hadoop:service=DataNode,name=DataNodeActivity*"):
            dn_read += b.get("BytesRead", 0)
            dn_written += b.get("BytesWritten", 0)
        try:
            hms_off = os.path.getsize(self.hms_log)
        except OSError:
            hms_off = 0
        return {"rpc": rpc, "dn_read": dn_read, "dn_written": dn_written, "hms_off": hms_off}

    def delta(self, before, after):
        ops = {k: after["rpc"].get(k, 0) - before["rpc"].get(k, 0) for k in after["rpc"]}
        client = {k: v for k, v in ops.items() if v and k not in DN_METHODS}
        calls = {}
        with open(self.hms_log, "rb") as f:
            f.seek(before["hms_off"])
            for line in f.read(max(0, after["hms_off"] - before["hms_off"])).decode(
                    "utf-8", "replace").splitlines():
                m = re.search(r"HiveMetaStore\.audit: .*cmd=source:\S+ (\w+)", line)
                if m:
                    calls[m.group(1)] = calls.get(m.group(1), 0) + 1
        return {
            "nn_rpcs": sum(client.values()),
            "nn_rpc_methods": dict(sorted(client.items(), key=lambda kv: -kv[1])),
            "hdfs_bytes_read": after["dn_read"] - before["dn_read"],
            "hdfs_bytes_written": after["dn_written"] - before["dn_written"],
            "hms_calls": sum(calls.values()),
            "hms_call_methods": dict(sorted(calls.items(), key=lambda kv: -kv[1])),
        }

    def delete(self, path):
        """Recursive delete through WebHDFS (path: an hdfs:// URL or an absolute path)."""
        p = re.sub(r"^hdfs://[^/]+", "", path)
        req = urllib.request.Request(
            f"{self.webhdfs}{urllib.request.quote(p)}?op=DELETE&recursive=true&user.name=root",
            method="DELETE")
        with urllib.request.urlopen(req, timeout=300) as r:
            r.read()


# ------------------------------------------------------------------------------- measurement

def _children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        fields = s[s.rfind(")") + 2:].split()
        kids.setdefault(int(fields[1]), []).append(int(d))
    return kids


def _tree(pid):
    kids, out, todo = _children_map(), [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def _proc_sample(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
        with open(f"/proc/{pid}/statm") as f:
            rss = int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return None
    fields = s[s.rfind(")") + 2:].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICK  # utime + stime
    return cpu, rss


def measure(name, cmd, cluster=None, env=None, stdout_path=None):
    """Runs cmd under /usr/bin/time -v; returns wall, cpu, peak RSS, stdout and counters."""
    out_dir = os.path.join(RESULTS, "logs")
    os.makedirs(out_dir, exist_ok=True)
    tfile = os.path.join(out_dir, f"{name}.time")
    stdout_path = stdout_path or os.path.join(out_dir, f"{name}.out")
    stderr_path = os.path.join(out_dir, f"{name}.err")
    before = cluster.counters() if cluster else None
    load0 = os.getloadavg()[0]
    t0 = time.time()
    with open(stdout_path, "wb") as so, open(stderr_path, "wb") as se:
        proc = subprocess.Popen(["/usr/bin/time", "-v", "-o", tfile] + cmd, stdout=so,
                                stderr=se, env=env, cwd=ROOT)
        peak_tree, cpu_seen, stop = [0], {}, threading.Event()

        def sample():
            while not stop.is_set():
                total = 0
                for p in _tree(proc.pid):
                    if p == proc.pid:
                        continue  # /usr/bin/time itself
                    s = _proc_sample(p)
                    if s:
                        cpu_seen[p] = s[0]
                        total += s[1]
                peak_tree[0] = max(peak_tree[0], total)
                stop.wait(0.1)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        rc = proc.wait()
        stop.set()
        th.join()
    wall = time.time() - t0
    tv = open(tfile).read()

    def field(label):
        m = re.search(re.escape(label) + r":\s*([\d.]+)", tv)
        return float(m.group(1)) if m else 0.0

    cpu_time = field("User time (seconds)") + field("System time (seconds)")
    r = {
        "name": name,
        "rc": rc,
        "wall_s": round(wall, 2),
        # time -v counts the reaped children; the sampler also sees JVMs a Python parent never
        # waits for. Take the larger.
        "cpu_s": round(max(cpu_time, sum(cpu_seen.values())), 2),
        "peak_rss_mib": round(max(field("Maximum resident set size (kbytes)") * 1024,
                                  peak_tree[0]) / 2**20, 1),
        "load_before": round(load0, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "stdout": stdout_path,
        "stderr": stderr_path,
    }
    if cluster:
        time.sleep(0.5)  # the metastore's log lines
        r.update(cluster.delta(before, cluster.counters()))
    if rc != 0:
        log(f"{name} exited {rc}: see {stderr_path}")
    return r


def last_json(path):
    for line in reversed(open(path, encoding="utf-8", errors="replace").read().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return {}


def other_load():
    """Other engineers' heavy processes: cargo, rustc, surefire, java not started by us."""
    try:
        out = subprocess.run(["pgrep", "-f", "cargo|rustc|surefire|java"], capture_output=True,
                             text=True).stdout.split()
    except OSError:
        return 0
    ours = set()
    for name in ("hdfs", "hms"):
        try:
            ours.add(open(os.path.join(STATE, "pids", f"{name}.pid")).read().strip())
        except OSError:
            pass
    return len([p for p in out if p not in ours and int(p) != os.getpid()])


# ------------------------------------------------------------------------------- one dataset

def run_ours(cluster, res, name, phase, table, extra):
    """Times hive-orc-compactor compact on the dataset's partition into res["phases"][phase];
    returns its JSON report."""
    env = dict(os.environ, RUST_LOG="hive_orc_compactor=debug")
    r = measure(f"{name}.{phase}", [TOOL, "compact", "--table", table, "--partition", PARTITION,
                                    "--json", *extra], cluster, env=env)
    out = last_json(r["stdout"])
    r.update(status=out.get("status"), files_after=out.get("files_after"),
             bytes_read=r.get("hdfs_bytes_read"), bytes_written=out.get("bytes_after"),
             new_location=out.get("new_location"), tool_seconds=out.get("seconds"),
             verify=out.get("verify"))
    if out.get("status") != "compacted":
        log(f"{name}: {phase}: status {out.get('status')}: {out.get('reason')}")
    res["phases"][phase] = r
    return out


def threads_flag(args):
    """compact's --threads for the sets other than the re-encode ones: only when given (one
    count), so that they keep the tool's default otherwise."""
    return ["--threads", args.threads] if args.threads else []


def rollback(table, name):
    """Rolls the dataset's partition back to its original files (not timed); True when done."""
    rb = subprocess.run([TOOL, "rollback", "--table", table, "--partition", PARTITION, "--json"],
                        capture_output=True, text=True)
    if rb.returncode != 0:
        log(f"{name}: rollback before the next run failed: {rb.stdout} {rb.stderr}")
    return rb.returncode == 0


def rollback_all(table, specs, name):
    """Rolls every partition of the table back to its original files (not timed), four at a
    time; stops the run if one fails, since the next step would not compact identical data."""
    log(f"{name}: rolling back {len(specs)} partitions (not timed)")
    t0 = time.time()

    def one(spec):
        return subprocess.run([TOOL, "rollback", "--table", table, "--partition", spec, "--json"],
                              capture_output=True, text=True)

    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(4) as pool:
        for spec, rb in zip(specs, pool.map(one, specs)):
            if rb.returncode != 0:
                raise SystemExit(f"{name}: rollback of {spec} failed: {rb.stdout} {rb.stderr}")
    log(f"{name}: rolled back in {time.time() - t0:.0f} s")


def orc_tools_classpath():
    """ORC tools with an HDFS client, as scripts/orc-tools runs them (resolved once, cached)."""
    cp = subprocess.run([os.path.join(ROOT, "scripts", "orc-tools"), "--classpath"], check=True,
                        capture_output=True, text=True, cwd=ROOT).stdout.strip()
    # The Hadoop configuration directory first, so hdfs:// resolves as the tool's does.
    conf = os.environ.get("HADOOP_CONF_DIR")
    return f"{conf}:{cp}" if conf else cp


def spark_env():
    return dict(os.environ, JAVA_HOME=JAVA_HOME, PYSPARK_PYTHON=VENV_PY,
                SPARK_LOCAL_IP="127.0.0.1")


def run_dataset(cluster, name, args):
    what, codec = DATASETS[name]
    res = {"dataset": name, "what": what, "phases": {}}
    log(f"== {what}: generating")
    m = generate(name, args, res)
    part = m["tables"][0]["partitions"][0]
    loc, table_dir = part["location"], m["tables"][0]["location"]
    res.update(files_before=part["file_count"], bytes_before=part["total_bytes"],
               rows=part["rows"], location=loc)
    log(f"{name}: {part['file_count']} files, {part['total_bytes'] / 2**20:.0f} MiB, "
        f"{part['rows']} rows in {res['generate_s']} s")
    table = f"{name}.{name}"
    big = name == "bench_big"

    local_in = os.path.join(STATE, "orc-merge", name, "in")
    if not big and not args.skip_orc:
        # The same files on local disk for ORC's merge (not timed).
        shutil.rmtree(os.path.join(STATE, "orc-merge", name), ignore_errors=True)
        fetch_local(loc, local_in)

    # (a) raw copy
    dst = table_dir + "/.bench-rawcopy"
    r = measure(f"{name}.rawcopy", [RAWCOPY, loc, dst], cluster)
    out = last_json(r["stdout"])
    r.update(files_after=out.get("files_out"), bytes_read=out.get("bytes_read"),
             bytes_written=out.get("bytes_written"))
    res["phases"]["rawcopy"] = r
    cluster.delete(dst)

    # (b) ours, default verification (--verify full)
    # These sets measure stripe copy against a plain copy of the bytes: under the default
    # --stripes auto their tiny stripes would be re-encoded, which R and RBIG measure.
    out = run_ours(cluster, res, name, "ours", table, ["--stripes", "copy", *threads_flag(args)])

    # (b') ours with --verify tail, on the same files: roll the partition back first (not timed;
    # the first run's files stay in its own directory, so the inputs are the same files).
    if out.get("status") == "compacted" and not args.skip_tail and rollback(table, name):
        out = run_ours(cluster, res, name, "ours_tail", table,
                       ["--stripes", "copy", "--verify", "tail", *threads_flag(args)])

    # (b'') the memory sets once more with the defaults, which re-encode their tiny stripes:
    # the memory bound holds for what an operator runs, not only for the stripe copy.
    if name in MEMORY_SETS and out.get("status") == "compacted" and rollback(table, name):
        run_ours(cluster, res, name, "ours_auto", table, threads_flag(args))

    # (d) ORC's own merge on local disk
    if not big and not args.skip_orc:
        local_out = os.path.join(STATE, "orc-merge", name, "out")
        r = measure(f"{name}.orcmerge",
                    [os.path.join(JAVA_HOME, "bin", "java"), "-cp",
                     f"{ORC_UBER}:{os.path.join(STATE, 'classes')}", "OrcMerge", local_in,
                     local_out, str(TARGET)])
        out = last_json(r["stdout"])
        r.update(files_after=out.get("files_out"), bytes_read=out.get("bytes_read"),
                 bytes_written=out.get("bytes_written"), not_merged=out.get("not_merged"))
        res["phases"]["orcmerge"] = r
        shutil.rmtree(os.path.join(STATE, "orc-merge", name), ignore_errors=True)

    # (d') the same merge reading and writing HDFS, as we do: ORC 1.9.5 with the Hadoop 3.4.1
    # client of scripts/orc-tools.
    if not big and not args.skip_orc:
        dst = table_dir + "/.bench-orcmerge"
        r = measure(f"{name}.orcmerge_hdfs",
                    [os.path.join(JAVA_HOME, "bin", "java"), "-cp",
                     f"{orc_tools_classpath()}:{os.path.join(STATE, 'classes')}", "OrcMerge",
                     loc, dst, str(TARGET)], cluster)
        out = last_json(r["stdout"])
        r.update(files_after=out.get("files_out"), bytes_read=out.get("bytes_read"),
                 bytes_written=out.get("bytes_written"), not_merged=out.get("not_merged"))
        res["phases"]["orcmerge_hdfs"] = r
        cluster.delete(dst)

    # (c) Spark
    if not big and not args.skip_spark and name in args.spark_sets.split(","):
        r = measure(f"{name}.spark",
                    [VENV_PY, os.path.join(HERE, "spark_rewrite.py"),
                     "--table", table, "--partition", PARTITION, "--original", loc,
                     "--bytes", str(part["total_bytes"]), "--codec", codec,
                     "--mode", args.spark_mode], cluster, env=spark_env())
        out = last_json(r["stdout"])
        r.update(files_after=out.get("files_after"), rows_after=out.get("rows_after"),
                 timed_seconds=out.get("timed_seconds"), steps=out.get("steps"),
                 bytes_read=r.get("hdfs_bytes_read"), bytes_written=r.get("hdfs_bytes_written"))
        res["phases"]["spark"] = r

    drop(cluster, name)
    return res


def generate(name, args, res):
    """Writes the set `name` into a database of that name; returns its manifest."""
    manifest = os.path.join(RESULTS, f"{name}.manifest.json")
    if args.reuse_data:
        # Made earlier by the same generator (scripts/fixtures --manifest DIR/<set>.manifest.json)
        # and still in the cluster: the runs alone, when generating would take longer than them.
        shutil.copy(os.path.join(args.reuse_data, f"{name}.manifest.json"), manifest)
        res["generate_s"] = 0
        return json.load(open(manifest))
    env = dict(os.environ)
    # Full C2 JIT and more heap for the generator (scripts/fixtures' defaults suit small sets).
    env["FIXTURES_JAVA_OPTS"] = "-XX:TieredStopAtLevel=4 -Xmx3g"
    t0 = time.time()
    g = subprocess.run([os.path.join(ROOT, "scripts", "fixtures"), "--db", name,
                        "--set", GENERATED_AS.get(name, (name,))[0],
                        "--bench-scale", str(args.scale), "--threads", str(args.fixture_threads),
                        "--quiet", "--manifest", manifest], env=env, cwd=ROOT)
    if g.returncode != 0:
        raise SystemExit(f"generating {name} failed")
    res["generate_s"] = round(time.time() - t0, 1)
    return json.load(open(manifest))


def drop(cluster, name):
    subprocess.run([os.path.join(ROOT, "scripts", "fixtures"), "--drop", "--db", name, "--quiet"],
                   cwd=ROOT)
    # Rollbacks and drops move files to the HDFS trash, which would keep every dataset on the
    # disk until the run ends (a full run filled a 50 GB disk and the NameNode's safe mode
    # stopped the 10 GiB case): empty it, permanently (WebHDFS deletes bypass the trash).
    cluster.delete(f"/user/{getpass.getuser()}/.Trash")


# ------------------------------------------------------------------------------- re-encode

def fetch_local(src, dst):
    """Copies an HDFS directory to local disk (not timed), as the ORC merge's inputs are."""
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    subprocess.run([os.path.join(ROOT, "scripts", "cluster"), "fs", "-get", src, dst],
                   check=True, cwd=ROOT, stderr=subprocess.DEVNULL)


def data_bytes(d):
    """Bytes of the ORC files of a local directory, hidden ones (._SUCCESS.crc, _SUCCESS) aside."""
    return sum(e.stat().st_size for e in os.scandir(d)
               if e.is_file() and not e.name.startswith((".", "_")))


def run_reencode(cluster, name, args):
    """Ours (--stripes rewrite), ORC C++ through pyarrow and Spark re-encoding one partition of
    tiny stripes; then each output on local disk read back and weighed."""
    what, codec = DATASETS[name]
    res = {"dataset": name, "what": what, "phases": {}, "reads": {}}
    log(f"== {what}: generating")
    m = generate(name, args, res)
    part = m["tables"][0]["partitions"][0]
    loc = part["location"]
    res.update(files_before=part["file_count"], bytes_before=part["total_bytes"],
               rows=part["rows"], location=loc)
    log(f"{name}: {part['file_count']} files, {part['total_bytes'] / 2**20:.0f} MiB, "
        f"{part['rows']} rows in {res['generate_s']} s")
    table = f"{name}.{name}"
    work = os.path.join(STATE, "reencode", name)
    shutil.rmtree(work, ignore_errors=True)
    local_in = os.path.join(work, "in")
    fetch_local(loc, local_in)
    if name in FROM_CPP:
        subprocess.run([PYARROW_PY, os.path.join(HERE, "pyarrow_orc.py"), "rewrite-each",
                        "--input", local_in, "--codec", codec], check=True)
        names = sorted(n for n in os.listdir(local_in) if not n.startswith((".", "_")))
        subprocess.run([os.path.join(ROOT, "scripts", "cluster"), "fs", "-put", "-f",
                        *[os.path.join(local_in, n) for n in names], loc],
                       check=True, cwd=ROOT, stderr=subprocess.DEVNULL)
        part["total_bytes"] = data_bytes(local_in)
        res.update(bytes_before=part["total_bytes"])
        log(f"{name}: written again by ORC C++: {part['total_bytes'] / 2**20:.0f} MiB")
    outputs = {}

    # Ours once per --threads count (#46), in the order given, phase ours_t<N>; only the first
    # run's output is read back. Between runs the partition is rolled back to its original
    # files (not timed), as for --repeats: the same partition compacted again N times per
    # count. A run's wall time on this machine varies by a second: each HDFS file close waits
    # 500 ms when the NameNode has not yet heard of its last block (hdfs-native's
    # COMPLETE_RETRY_DELAY_MS), a race each of our two closes loses about one time in four.
    # The partition is left as it was for the tools that follow.
    compacted = False

    def back():
        nonlocal compacted
        if compacted and rollback(table, name):
            compacted = False
        return not compacted

    for n in args.thread_counts:
        phase = f"ours_t{n}"
        flags = ["--stripes", "rewrite", "--threads", str(n)]
        if not back():
            break
        out = run_ours(cluster, res, name, phase, table, flags)
        r = res["phases"][phase]
        r.update(threads=n, walls=[r["wall_s"]])
        compacted = out.get("status") == "compacted"
        if compacted and "ours" not in outputs:
            outputs["ours"] = os.path.join(work, "ours")
            fetch_local(out["new_location"], outputs["ours"])
        for i in range(2, args.repeats + 1):
            if not compacted or not back():
                break
            again = measure(f"{name}.{phase}_{i}",
                            [TOOL, "compact", "--table", table, "--partition", PARTITION,
                             "--json", *flags], cluster,
                            env=dict(os.environ, RUST_LOG="hive_orc_compactor=debug"))
            compacted = last_json(again["stdout"]).get("status") == "compacted"
            if again["rc"] != 0:
                break
            r["walls"].append(again["wall_s"])
    back()

    pyarrow_reads = name not in NOT_FOR_PYARROW
    if not args.skip_pyarrow and pyarrow_reads:
        d = os.path.join(work, "pyarrow")
        os.makedirs(d)
        pyarrow = lambda i: measure(
            f"{name}.pyarrow" + (f"_{i}" if i > 1 else ""),
            [PYARROW_PY, os.path.join(HERE, "pyarrow_orc.py"), "reencode", "--input", local_in,
             "--output", os.path.join(d, f"{i:06d}_0"), "--codec", codec,
             "--stripe-size", str(STRIPE_SIZE)])
        r = pyarrow(1)
        o = last_json(r["stdout"])
        r.update(files_after=o.get("files_out"), rows_after=o.get("rows"),
                 timed_seconds=o.get("seconds"))
        r["walls"] = [r["wall_s"]]
        for i in range(2, args.repeats + 1):
            again = pyarrow(i)
            os.remove(os.path.join(d, f"{i:06d}_0"))
            if again["rc"] != 0:
                break
            r["walls"].append(again["wall_s"])
        res["phases"]["pyarrow"] = r
        if r["rc"] == 0:
            outputs["pyarrow"] = d

    if not args.skip_spark and (REENCODE_SETS[name] or name in args.spark_sets.split(",")):
        r = measure(f"{name}.spark",
                    [VENV_PY, os.path.join(HERE, "spark_rewrite.py"), "--table", table,
                     "--partition", PARTITION, "--original", loc,
                     "--bytes", str(part["total_bytes"]), "--codec", codec,
                     "--mode", args.spark_mode], cluster, env=spark_env())
        o = last_json(r["stdout"])
        r.update(files_after=o.get("files_after"), rows_after=o.get("rows_after"),
                 timed_seconds=o.get("timed_seconds"), steps=o.get("steps"))
        res["phases"]["spark"] = r
        if r["rc"] == 0 and o.get("location_after"):
            outputs["spark"] = os.path.join(work, "spark")
            fetch_local(o["location_after"], outputs["spark"])

    for label, d in outputs.items():
        res["reads"][label] = {"bytes": data_bytes(d)}
        for key, col in (("pyarrow_whole", []), ("pyarrow_column", ["--column", READ_COLUMN])):
            if not pyarrow_reads:
                break
            r = measure(f"{name}.read_{label}_{key}",
                        [PYARROW_PY, os.path.join(HERE, "pyarrow_orc.py"), "read", "--input", d,
                         *col])
            o = last_json(r["stdout"])
            res["reads"][label].update({key: o.get("median_s"), f"{key}_runs": o.get("runs"),
                                        "files": o.get("files"), "rows": o.get("rows"),
                                        "stripes": o.get("stripes")})
    if outputs and not args.skip_spark:
        r = measure(f"{name}.read_spark_scan",
                    [VENV_PY, os.path.join(HERE, "spark_scan.py"),
                     *[f"--input={label}={d}" for label, d in outputs.items()]], env=spark_env())
        o = last_json(r["stdout"])
        for label, v in o.items():
            res["reads"][label].update(spark_scan=v["median_s"], spark_scan_runs=v["runs"],
                                       sum_hash=v["sum_hash"])
    shutil.rmtree(work, ignore_errors=True)
    drop(cluster, name)
    return res


def wall(phase):
    """A phase's wall time: the median of its runs when --repeats ran it more than once."""
    return statistics.median(phase.get("walls") or [phase["wall_s"]])


def ours_runs(d):
    """A re-encode set's runs of ours, (threads, phase), one per --threads count, as they ran."""
    return [(r["threads"], r) for key, r in d["phases"].items() if key.startswith("ours_t")]


def reencode_report(runs):
    lines = ["", "Stripe re-encode (`compact --stripes rewrite`, 64 MiB stripes) on partitions of "
             "tiny stripes; ORC C++ is pyarrow on a local-disk copy of the same files, writing "
             "one file:", "",
             "| dataset | tool | wall s | CPU s | peak RSS MiB | files before → after | rows |",
             "|---|---|--:|--:|--:|---|--:|"]
    for d in runs:
        tools = [("ours", f"hive-orc-compactor --stripes rewrite --threads {n}", r)
                 for n, r in ours_runs(d)]
        tools += [(key, label, d["phases"][key]) for key, label in
                  (("pyarrow", "ORC C++ (pyarrow, local)"), ("spark", "Spark 3.5 rewrite"))
                  if key in d["phases"]]
        for key, label, r in tools:
            bad = "" if r["rc"] == 0 else f" (exit {r['rc']})"
            if key == "spark" and r.get("timed_seconds"):
                label += f" (rewrite alone {r['timed_seconds']:.1f} s)"
            walls = r.get("walls", [])
            if len(walls) > 1:
                label += f" (median of {len(walls)}: {', '.join(f'{w:.1f}' for w in walls)} s)"
            lines.append(f"| {d['what']} | {label}{bad} | {wall(r):.1f} | {r['cpu_s']:.1f} | "
                         f"{r['peak_rss_mib']:.0f} | {d['files_before']:,} → "
                         f"{r.get('files_after')} | {r.get('rows_after') or d['rows']:,} |")
    lines += ["", "Reading the outputs back (ours: the first --threads count's output; local "
              f"disk; pyarrow: median of 3 after one untimed pass, one column: `{READ_COLUMN}`; "
              "Spark: `sum(hash(*))`, every column decoded, "
              "median of 5 rounds over every output after one untimed scan of each, and its "
              "sums must agree):", "",
              "| dataset | output | files | stripes | MiB | pyarrow whole s | pyarrow one column "
              "s | Spark scan s | sum(hash(*)) |", "|---|---|--:|--:|--:|--:|--:|--:|--:|"]
    f = lambda v: "–" if v is None else f"{v:.3f}"
    for d in runs:
        for label, v in d["reads"].items():
            lines.append(f"| {d['what']} | {label} | {v.get('files')} | {v.get('stripes')} | "
                         f"{v['bytes'] / 2**20:,.1f} | {f(v.get('pyarrow_whole'))} | "
                         f"{f(v.get('pyarrow_column'))} | {f(v.get('spark_scan'))} | "
                         f"{v.get('sum_hash', '–')} |")
    lines += ["", "Ours, one row per --threads count (wall: the median over --repeats; CPU: the "
              "first run's). The read and byte ratios are of the first count's output, the one "
              "read back:", "",
              "| dataset | threads | ours wall s | ours CPU s | ours peak RSS MiB (target < 512) "
              "| 1 thread / this (speed-up; #46: ≥ 1.7 at 2) | ORC C++ / ours (wall = "
              "throughput ratio; target ≥ 0.8; #46: ≥ 1.6 at 2) | Spark / ours (wall; target ≥ "
              "10) | Spark rewrite only / ours | ours / Spark output: pyarrow whole, one column, "
              "Spark scan (target ≤ 1.2) | ours / Spark output bytes (target ≤ 1.1) |",
              "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|"]
    ratio = lambda a, b: "–" if not a or not b else f"{a / b:.2f}"
    for d in runs:
        ph, rd = d["phases"], d["reads"]
        sp, pa = ph.get("spark", {}), ph.get("pyarrow", {})
        one = ph.get("ours_t1")
        mine, theirs = rd.get("ours", {}), rd.get("spark", {})
        for i, (n, o) in enumerate(ours_runs(d)):
            if i == 0:
                reads = ", ".join(ratio(mine.get(k), theirs.get(k))
                                  for k in ("pyarrow_whole", "pyarrow_column", "spark_scan"))
                size = ratio(mine.get("bytes"), theirs.get("bytes"))
            else:
                reads = size = "–"
            lines.append(f"| {d['what']} | {n} | {wall(o):.2f} | {o['cpu_s']:.1f} | "
                         f"{o['peak_rss_mib']:.0f} | {ratio(one and wall(one), wall(o))} | "
                         f"{ratio(pa and wall(pa), wall(o))} | "
                         f"{ratio(sp.get('wall_s'), wall(o))} | "
                         f"{ratio(sp.get('timed_seconds'), wall(o))} | {reads} | {size} |")
    return lines


# ------------------------------------------------------------------------------- Iceberg

def run_partitions(cluster, name, args):
    """The set's PARTITION_SETS steps over its one table, in order; migrate is in place and
    revert restores the Hive table."""
    res = {"dataset": name, "phases": {}}
    log(f"== {name}: generating")
    m = generate(name, args, res)
    parts = m["tables"][0]["partitions"]
    res.update(partitions=len(parts), files=sum(p["file_count"] for p in parts),
               bytes=sum(p["total_bytes"] for p in parts), rows=sum(p["rows"] for p in parts))
    log(f"{name}: {res['partitions']} partitions, {res['files']} files, "
        f"{res['bytes'] / 2**20:.0f} MiB in {res['generate_s']} s")
    table = f"{name}.{GENERATED_AS.get(name, (name, name))[1]}"
    for i, step in enumerate(PARTITION_SETS[name]):
        if i and step == "compact --all" and "compact --all --batch-size 1" in res["phases"]:
            rollback_all(table, [p["spec"] for p in parts], name)
        cmd = PARTITION_STEPS[step]
        r = measure(f"{name}.{re.sub(r'[^A-Za-z0-9-]+', '_', step)}",
                    [TOOL, *cmd, *(threads_flag(args) if cmd[0] == "compact" else []),
                     "--table", table, "--json"], cluster)
        out = last_json(r["stdout"])
        summary = out.get("summary", out)
        r["status"] = out.get("status")
        r["counts"] = {k: v for k, v in summary.items() if isinstance(v, int)}
        # The tool's own count of its metastore calls, by method (`metastore_calls`).
        r["metastore_calls"] = summary.get("metastore_calls")
        res["phases"][step] = r
        if r["rc"] != 0:
            break
    # Iceberg's Spark procedure on the same table, which our revert has just made a Hive table
    # again (same files, same partitions).
    if not args.skip_spark and res["phases"].get("iceberg revert", {}).get("rc") == 0:
        r = measure(f"{name}.spark_migrate",
                    [VENV_PY, os.path.join(HERE, "spark_migrate.py"),
                     "--table", table, "--iceberg-jar", ICEBERG_SPARK_JAR], cluster, env=spark_env())
        out = last_json(r["stdout"])
        r.update(status=out.get("status"), timed_seconds=out.get("timed_seconds"),
                 steps=out.get("steps"), migrated_files=out.get("migrated_files"))
        res["phases"]["spark_migrate"] = r
    if not args.reuse_data:
        drop(cluster, name)
    return res


def partitions_report(runs):
    lines = ["", "Tables of many partitions of tiny files (whole-table commands; migrate in "
             "place, revert restores the Hive table):", "",
             "| partitions | files | step | wall s | CPU s | peak RSS MiB | files/s | NN RPCs "
             "| HMS audit lines | metastore calls (the tool's count) | per partition | by method "
             "|", "|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|---|"]
    for d in runs:
        for step, r in d["phases"].items():
            bad = "" if r["rc"] == 0 else f" (exit {r['rc']})"
            rate = d["files"] / r["wall_s"] if r["wall_s"] and "revert" not in step else None
            if step == "spark_migrate" and r.get("timed_seconds"):
                step = f"Spark migrate (procedure alone {r['timed_seconds']:.1f} s)"
            lines.append(f"| {d['partitions']:,} | {d['files']:,} | {step}{bad} | "
                         f"{r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['peak_rss_mib']:.0f} | "
                         f"{'–' if rate is None else f'{rate:,.0f}'} | {r.get('nn_rpcs', '')} | "
                         f"{r.get('hms_calls', '')} | {calls_cells(r, d['partitions'])} |")
    return lines


def calls_cells(r, partitions):
    """The tool's own metastore call count (`metastore_calls`): total, per partition, and each
    method per partition."""
    calls = dict(r.get("metastore_calls") or {})
    total = calls.pop("total", None)
    if total is None:
        return "– | – | –"
    methods = ", ".join(f"{m} {n / partitions:.3g}"
                        for m, n in sorted(calls.items(), key=lambda kv: -kv[1]))
    return f"{total:,} | {total / partitions:.3f} | {methods}"


# ------------------------------------------------------------------------------- report

def mib(b):
    return "" if b is None else f"{b / 2**20:,.0f}"


# How BENCHMARKS.md names each set in its "Latest run per set" table.
SET_LABELS = {"bench_a": "A", "bench_b": "B", "bench_c": "C", "bench_wide": "W",
              "bench_w2k": "W2k", "bench_big": "BIG", "bench_t1k": "T1k", "bench_t10k": "T10k",
              "bench_t100k": "T100k", "bench_r": "R", "bench_rbig": "RBIG",
              "bench_rts": "RTS", "bench_rcpp": "RC++", "bench_rbigts": "RBIGTS",
              "bench_rbigcpp": "RBIGC++"}


def latest_rows(results, reencode, machine):
    """Rows in the shape of BENCHMARKS.md's "Latest run per set" table, so updating it is a
    paste: set, what, date, commit, machine and load, ours wall, ours / raw copy, peak RSS,
    NameNode calls, against Spark, against ORC."""
    when = machine["when"].replace("T", " ")[:16]
    where = (f"{machine['nproc']} cores, load {machine['load_start']} → {machine['load_end']}")
    ratio = lambda a, b: None if not a or not b else a / b
    fmt = lambda v: "–" if v is None else f"{v:.2f}"
    lines = ["Rows for BENCHMARKS.md, \"Latest run per set\" (replace each set's row):", ""]
    for d in results:
        ph = d["phases"]
        o, t, a, raw = ph.get("ours"), ph.get("ours_tail"), ph.get("ours_auto"), ph.get("rawcopy")
        if not o:
            continue
        walls = [f"full {wall(o):.1f}"] + ([f"tail {wall(t):.1f}"] if t else []) + \
            ([f"auto {wall(a):.1f}"] if a else [])
        if raw:
            walls[-1] += f" (raw copy {wall(raw):.1f})"
        vs_raw = " / ".join(fmt(ratio(raw and wall(raw), wall(x))) for x in (o, t) if x)
        rss = " / ".join(f"{x['peak_rss_mib']:.0f}" for x in (o, t, a) if x)
        sp = ph.get("spark")
        spark = f"Spark {wall(sp):.1f} s: {fmt(ratio(wall(sp), wall(o)))}×" if sp else "not run"
        orc = []
        for key, label in (("orcmerge", "local"), ("orcmerge_hdfs", "HDFS")):
            m = ph.get(key)
            if m:
                orc.append(f"{label} {wall(m):.1f} s: {fmt(ratio(wall(m), wall(o)))}"
                           + (f" / {fmt(ratio(wall(m), wall(t)))}" if t else ""))
        lines.append(f"| {SET_LABELS.get(d['dataset'], d['dataset'])} | {d['what']} | {when} | "
                     f"{machine['commit']} | {where} | {', '.join(walls)} | {vs_raw} | {rss} | "
                     f"{o.get('nn_rpcs', '')} | {spark} | {'; '.join(orc) or 'not run'} |")
    for d in reencode:
        ph = d["phases"]
        sp, pa = ph.get("spark"), ph.get("pyarrow")
        for n, o in ours_runs(d):
            spark = f"Spark {wall(sp):.1f} s: {fmt(ratio(wall(sp), wall(o)))}×" if sp else "not run"
            orc = f"ORC C++ {wall(pa):.2f} s: {fmt(ratio(wall(pa), wall(o)))}" if pa else "not run"
            lines.append(f"| {SET_LABELS.get(d['dataset'], d['dataset'])} | {d['what']}, "
                         f"--threads {n} | {when} | {machine['commit']} | {where} | median "
                         f"{wall(o):.2f} ({', '.join(f'{w:.2f}' for w in o['walls'])}) | – | "
                         f"{o['peak_rss_mib']:.0f} | {o.get('nn_rpcs', '')} | {spark} | {orc} |")
    return lines + [""]


def report(results, many, reencode, machine, args):
    lines = latest_rows(results, reencode, machine)
    lines.append(f"Run {machine['when']} ({'quick, ' if args.quick else ''}scale "
                 f"{args.scale}); load average at start {machine['load_start']}, at end "
                 f"{machine['load_end']}; other engineers' cargo/rustc/java processes at start "
                 f"{machine['others_start']}, at end {machine['others_end']}.")
    if not results:
        if many:
            lines.extend(partitions_report(many))
        if reencode:
            lines.extend(reencode_report(reencode))
        return "\n".join(lines) + "\n"
    lines.append("")
    lines.append("| dataset | tool | wall s | CPU s | peak RSS MiB | MiB/s | files before → after "
                 "| HDFS MiB read / written | NN RPCs | HMS calls |")
    lines.append("|---|---|--:|--:|--:|--:|---|---|--:|--:|")
    ratios = []
    for d in results:
        ph = d["phases"]
        for key, label in (("rawcopy", "raw copy (hdfs-native)"),
                           ("ours", "hive-orc-compactor --stripes copy (--verify full)"),
                           ("ours_tail", "hive-orc-compactor --verify tail"),
                           ("ours_auto", "hive-orc-compactor, defaults (re-encode)"),
                           ("orcmerge", "ORC mergeFiles (local disk)"),
                           ("orcmerge_hdfs", "ORC mergeFiles (HDFS)"),
                           ("spark", f"Spark 3.5 rewrite ({args.spark_mode})")):
            r = ph.get(key)
            if not r:
                continue
            thr = d["bytes_before"] / 2**20 / r["wall_s"] if r["wall_s"] else 0
            if key == "orcmerge":
                io = f"local {mib(r.get('bytes_read'))} / {mib(r.get('bytes_written'))}"
                rpcs = hms = "–"
            else:
                io = f"{mib(r.get('hdfs_bytes_read'))} / {mib(r.get('hdfs_bytes_written'))}"
                rpcs, hms = r.get("nn_rpcs", ""), r.get("hms_calls", "")
            bad = "" if r["rc"] == 0 else f" (exit {r['rc']})"
            walls = r.get("walls", [])
            if len(walls) > 1:
                label += f" (median of {len(walls)}: {', '.join(f'{w:.1f}' for w in walls)} s)"
            lines.append(f"| {d['what']} | {label}{bad} | {wall(r):.1f} | {r['cpu_s']:.1f} | "
                         f"{r['peak_rss_mib']:.0f} | {thr:,.0f} | {d['files_before']:,} → "
                         f"{r.get('files_after')} | {io} | {rpcs} | {hms} |")
        o = ph.get("ours")
        if o and o["wall_s"]:
            row = {"dataset": d["what"]}
            if ph.get("rawcopy"):
                row["ours_vs_raw"] = ph["rawcopy"]["wall_s"] / o["wall_s"]
            if ph.get("spark"):
                row["spark_vs_ours"] = ph["spark"]["wall_s"] / o["wall_s"]
                if ph["spark"].get("timed_seconds"):
                    row["spark_rw_vs_ours"] = ph["spark"]["timed_seconds"] / o["wall_s"]
            if ph.get("orcmerge"):
                row["orc_vs_ours"] = ph["orcmerge"]["wall_s"] / o["wall_s"]
            if ph.get("orcmerge_hdfs"):
                row["orch_vs_ours"] = ph["orcmerge_hdfs"]["wall_s"] / o["wall_s"]
            row["ours_rss"] = o["peak_rss_mib"]
            t = ph.get("ours_tail")
            if t and t["wall_s"]:
                if ph.get("rawcopy"):
                    row["tail_vs_raw"] = ph["rawcopy"]["wall_s"] / t["wall_s"]
                if ph.get("orcmerge"):
                    row["orc_vs_tail"] = ph["orcmerge"]["wall_s"] / t["wall_s"]
                if ph.get("orcmerge_hdfs"):
                    row["orch_vs_tail"] = ph["orcmerge_hdfs"]["wall_s"] / t["wall_s"]
                row["ours_rss"] = max(row["ours_rss"], t["peak_rss_mib"])
            ratios.append(row)
    lines.append("")
    lines.append("| dataset | ours / raw copy (throughput; target ≥ 0.80) | ours --verify tail / "
                 "raw copy | Spark / ours (wall; target ≥ 10) | Spark rewrite only / ours | ORC "
                 "merge local / ours (wall; target > 1) | ORC merge local / ours --verify tail | ORC "
                 "merge HDFS / ours | ORC merge HDFS / ours --verify tail | ours peak RSS MiB "
                 "(target < 256) |")
    lines.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in ratios:
        f = lambda k: f"{r[k]:.2f}" if k in r else "–"
        lines.append(f"| {r['dataset']} | {f('ours_vs_raw')} | {f('tail_vs_raw')} | "
                     f"{f('spark_vs_ours')} | {f('spark_rw_vs_ours')} | {f('orc_vs_ours')} | "
                     f"{f('orc_vs_tail')} | {f('orch_vs_ours')} | {f('orch_vs_tail')} | "
                     f"{r['ours_rss']:.0f} |")
    memory = sorted((d for d in results if d["dataset"] in MEMORY_SETS and d["phases"].get("ours")),
                    key=lambda d: d["files_before"])
    if memory:
        lines.append("")
        lines.append("Memory against the file count (16 KiB files of one table; target < 256 MiB "
                     "whatever the count), and NameNode calls per input file (target ≤ 1.1 plus "
                     "a constant):")
        lines.append("")
        lines.append("| files | ours peak RSS MiB | ours --verify tail peak RSS MiB | ours "
                     "defaults (re-encode) peak RSS MiB | raw copy peak RSS MiB | ours NN RPCs | "
                     "per input file |")
        lines.append("|--:|--:|--:|--:|--:|--:|--:|")
        for d in memory:
            ph = d["phases"]
            rss = lambda k: f"{ph[k]['peak_rss_mib']:.0f}" if ph.get(k) else "–"
            rpcs = ph["ours"].get("nn_rpcs")
            per = f"{rpcs / d['files_before']:.2f}" if rpcs is not None else "–"
            lines.append(f"| {d['files_before']:,} | {rss('ours')} | {rss('ours_tail')} | "
                         f"{rss('ours_auto')} | {rss('rawcopy')} | {rpcs if rpcs is not None else '–'} | {per} |")
    if many:
        lines.extend(partitions_report(many))
    if reencode:
        lines.extend(reencode_report(reencode))
    return "\n".join(lines) + "\n"


def machine_facts():
    mem = open("/proc/meminfo").readline().split()[1]
    try:
        cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
               if l.startswith("model name")][0]
    except IndexError:
        cpu = "?"
    df = subprocess.run(["df", "-h", STATE], capture_output=True, text=True).stdout.splitlines()[-1]
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "?"
    return {"when": datetime.datetime.now().isoformat(timespec="seconds"), "commit": commit,
            "nproc": os.cpu_count(), "cpu": cpu, "mem_gib": round(int(mem) / 2**20, 1),
            "disk": df, "kernel": os.uname().release}


def main():
    global RESULTS, TOOL, RAWCOPY, VENV_PY, PYARROW_PY
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--big", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--sets", default="bench_a,bench_b,bench_c,bench_wide,bench_t100k,bench_w2k")
    ap.add_argument("--scale", type=float)
    # The fixture generator's parallel writers (scripts/fixtures --threads).
    ap.add_argument("--fixture-threads", type=int, default=3)
    # hive-orc-compactor compact --threads (#46): a list for the re-encode sets (default 1,2),
    # one count for the others, passed only when given.
    ap.add_argument("--threads")
    ap.add_argument("--spark-mode", choices=["hive", "path"], default="hive")
    ap.add_argument("--skip-spark", action="store_true")
    # Spark's own start-up (JVM, Ivy resolution of the Hive 3.1.3 client) is half a minute on
    # every run: --quick runs it on dataset A only.
    ap.add_argument("--spark-sets")
    ap.add_argument("--skip-orc", action="store_true")
    ap.add_argument("--skip-tail", action="store_true")
    ap.add_argument("--skip-pyarrow", action="store_true")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--reuse-data", metavar="DIR")
    ap.add_argument("--results", required=True)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--rawcopy", required=True)
    ap.add_argument("--venv-python", required=True)
    # pyarrow's venv (scripts/install-prereqs): the re-encode sets' ORC C++ and output reads.
    ap.add_argument("--pyarrow-python", required=True)
    args = ap.parse_args()
    if args.scale is None:
        args.scale = 0.02 if args.quick else 1.0
    if args.spark_sets is None:
        # Spark rewrote 0.5-1 MiB/s here (BENCHMARKS.md): on A (1 GiB) or C (6.4 GiB) at full
        # size it alone would take from half an hour to hours, so the full run measures it on
        # B (the small-file case, 640 MiB) and --scale 0.1 runs show it on A too.
        args.spark_sets = "bench_a" if args.quick else ("bench_b" if args.scale >= 1 else "bench_a,bench_b")
    sets = [s for s in args.sets.split(",") if s]
    if args.big and "bench_big" not in sets:
        sets.append("bench_big")
    try:
        args.thread_counts = [int(n) for n in (args.threads or "1,2").split(",")]
    except ValueError:
        ap.error(f"--threads {args.threads}: a comma-separated list of counts")
    if min(args.thread_counts) < 1:
        ap.error("--threads: counts of at least 1")
    others = [s for s in sets if s not in REENCODE_SETS]
    if args.threads and len(args.thread_counts) > 1 and others:
        ap.error(f"--threads {args.threads}: several counts are for the re-encode sets; "
                 f"{','.join(others)} take one")
    RESULTS, TOOL, RAWCOPY, VENV_PY = args.results, args.tool, args.rawcopy, args.venv_python
    PYARROW_PY = args.pyarrow_python
    os.makedirs(RESULTS, exist_ok=True)
    cluster = Cluster()
    machine = machine_facts()
    machine.update(load_start=round(os.getloadavg()[0], 2), others_start=other_load())
    results, many, reencode = [], [], []
    for s in sets:
        if s in PARTITION_SETS:
            many.append(run_partitions(cluster, s, args))
        elif s in REENCODE_SETS:
            reencode.append(run_reencode(cluster, s, args))
        else:
            results.append(run_dataset(cluster, s, args))
        json.dump({"machine": machine, "results": results, "many_partitions": many,
                   "reencode": reencode},
                  open(os.path.join(RESULTS, "results.json"), "w"), indent=1)
    machine.update(load_end=round(os.getloadavg()[0], 2), others_end=other_load())
    md = report(results, many, reencode, machine, args)
    json.dump({"machine": machine, "args": vars(args), "results": results, "many_partitions": many,
               "reencode": reencode},
              open(os.path.join(RESULTS, "results.json"), "w"), indent=1)
    open(os.path.join(RESULTS, "results.md"), "w").write(md)
    print(md)
    log(f"results: {RESULTS}/results.md and results.json")


if __name__ == "__main__":
    main()

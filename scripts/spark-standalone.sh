#!/bin/sh
# A Spark standalone cluster on this machine, from pyspark's own launcher: a master and WORKERS workers (one core
# each) on 127.0.0.1, for `kdissect spark --master spark://127.0.0.1:PORT` (docs/pipeline.md).
#
#   scripts/spark-standalone.sh start DIR [WORKERS]   prints the master's URL; logs and process ids go in DIR
#   scripts/spark-standalone.sh stop DIR              stops the processes DIR names, by process id
set -eu
command=${1:?start DIR [WORKERS] | stop DIR}
dir=${2:?a folder for the logs and process ids}
workers=${3:-2}
python=${PYTHON:-python3}

if [ "$command" = stop ]; then
    for pid_file in "$dir"/*.pid; do
        [ -e "$pid_file" ] || continue
        kill "$(cat "$pid_file")" 2>/dev/null || true
        rm -f "$pid_file"
    done
    exit 0
fi
[ "$command" = start ] || { echo "spark-standalone.sh: start or stop, not $command" >&2; exit 2; }

mkdir -p "$dir"
spark_home=$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="spark://127.0.0.1:$port"
export SPARK_HOME="$spark_home" SPARK_LOCAL_IP=127.0.0.1 SPARK_NO_DAEMONIZE=1

# spark-class ends in exec: the process id recorded is the JVM's
"$spark_home/bin/spark-class" org.apache.spark.deploy.master.Master --host 127.0.0.1 --port "$port" --webui-port 0 \
    >"$dir/master.log" 2>&1 &
echo $! >"$dir/master.pid"
tries=0
until grep -q "I have been elected leader" "$dir/master.log" 2>/dev/null; do
    tries=$((tries + 1))
    if [ $tries -gt 120 ] || ! kill -0 "$(cat "$dir/master.pid")" 2>/dev/null; then
        echo "spark-standalone.sh: the master did not start (see $dir/master.log)" >&2
        "$0" stop "$dir"
        exit 1
    fi
    sleep 0.5
done
n=1
while [ $n -le "$workers" ]; do
    "$spark_home/bin/spark-class" org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --cores 1 --memory 1g \
        --webui-port 0 --work-dir "$dir/work-$n" "$url" >"$dir/worker-$n.log" 2>&1 &
    echo $! >"$dir/worker-$n.pid"
    n=$((n + 1))
done
tries=0
until [ "$(grep -c "Registering worker" "$dir/master.log")" -ge "$workers" ]; do
    tries=$((tries + 1))
    if [ $tries -gt 120 ]; then
        echo "spark-standalone.sh: the workers did not register (see $dir/worker-*.log)" >&2
        "$0" stop "$dir"
        exit 1
    fi
    sleep 0.5
done
echo "$url"

#!/usr/bin/env bash
# Writes payloads.tsv beside this script: the bytes Apache Kafka's own serializers write for the values of Kafka's own
# tests (name, tab, hex; KafkaBytes.java says which test each comes from). tests/test_group_payloads.py and
# tests/test_internal_records.py decode them field by field.
#
#   tests/kafka_written/build.sh KAFKA_GIT_DIR JARS_DIR [COMMIT]
#
# KAFKA_GIT_DIR: a clone of apache/kafka (bare or not); COMMIT defaults to its HEAD. JARS_DIR: a folder of jars with
# jackson-databind, slf4j-api, zstd-jni, lz4-java and snappy-java (pyspark's jars/ folder has them all). Needs a JDK.
# Nothing of Kafka is kept: its sources are archived into a temporary folder, its message classes generated there by
# its own generator, and the serializers compiled from them. Two stubs cut the compile short of the rest of Kafka
# Streams (its Task interface, of which SubscriptionInfo reads one constant, and StreamsException's links), and
# HostInfo is compiled without its javadoc imports; the serializers themselves are Kafka's.
set -euo pipefail
KAFKA=$1 JARS=$2 COMMIT=${3:-HEAD}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
mkdir src gen classes stubs
git -C "$KAFKA" archive "$COMMIT" generator/src/main clients/src/main streams/src/main connect/runtime/src/main/java \
    connect/api/src/main/java server-common/src/main/java group-coordinator/src/main/resources \
    transaction-coordinator/src/main/resources | tar -x -C src
CP="$JARS/*"

# Kafka's message generator, without its command line (argparse4j) and its Jdk8Module (not needed to read specs)
GENERATOR=src/generator/src/main/java/org/apache/kafka/message/MessageGenerator.java
perl -0pi -e 's/    public static void main\(.*?\n    }\n//s; s/^import (static )?net\.sourceforge.*\n//mg; s/^.*Jdk8Module.*\n//mg' "$GENERATOR"
find src/generator/src/main/java -name '*.java' -not -path '*checker*' > generator.txt
javac -nowarn -d classes/generator -cp "$CP" @generator.txt
cat > Generate.java <<'JAVA'
import java.util.Arrays;
public class Generate {
    public static void main(String[] a) throws Exception {
        org.apache.kafka.message.MessageGenerator.processDirectories(a[0], a[1], a[2],
            Arrays.asList(a).subList(3, a.length), Arrays.asList("MessageDataGenerator", "JsonConverterGenerator"));
    }
}
JAVA
javac -d classes/generator -cp "classes/generator:$CP" Generate.java
generate() { java -cp "classes/generator:$CP" Generate "$1" "gen/${1//.//}" "$2" "${@:3}"; }
generate org.apache.kafka.common.message src/clients/src/main/resources/common/message ApiMessageTypeGenerator
generate org.apache.kafka.streams.internals.generated src/streams/src/main/resources/common/message
generate org.apache.kafka.coordinator.group.generated src/group-coordinator/src/main/resources/common/message
generate org.apache.kafka.coordinator.transaction.generated src/transaction-coordinator/src/main/resources/common/message

mkdir -p stubs/org/apache/kafka/streams/processor/internals stubs/org/apache/kafka/streams/errors stubs/org/apache/kafka/streams/state
cat > stubs/org/apache/kafka/streams/processor/internals/Task.java <<'JAVA'
package org.apache.kafka.streams.processor.internals;
public interface Task { long LATEST_OFFSET = -2L; }
JAVA
cat > stubs/org/apache/kafka/streams/errors/StreamsException.java <<'JAVA'
package org.apache.kafka.streams.errors;
public class StreamsException extends org.apache.kafka.common.KafkaException {
    public StreamsException(String message) { super(message); }
    public StreamsException(String message, Throwable cause) { super(message, cause); }
    public StreamsException(Throwable cause) { super(cause); }
}
JAVA
sed '/^import org.apache.kafka.streams.KafkaStreams;/d; /^import org.apache.kafka.streams.processor.internals.StreamsPartitionAssignor;/d' \
    src/streams/src/main/java/org/apache/kafka/streams/state/HostInfo.java > stubs/org/apache/kafka/streams/state/HostInfo.java

SOURCES=stubs:src/clients/src/main/java:src/streams/src/main/java:src/connect/runtime/src/main/java:src/connect/api/src/main/java
SOURCES=$SOURCES:src/server-common/src/main/java:gen
javac -nowarn -proc:none -d classes/run -cp "$CP" -sourcepath "$SOURCES" "$HERE/KafkaBytes.java"
{
    echo "# written by tests/kafka_written/build.sh from apache/kafka $(git -C "$KAFKA" rev-parse "$COMMIT")"
    java -cp "classes/run:$CP" KafkaBytes
} > "$HERE/payloads.tsv"

import java.nio.ByteBuffer;
import java.util.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.runtime.distributed.*;
import org.apache.kafka.connect.util.ConnectorTaskId;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.internals.assignment.*;
import org.apache.kafka.streams.state.HostInfo;
import org.apache.kafka.streams.processor.assignment.ProcessId;

/** Prints bytes written by Kafka's own serializers for the values of Kafka's tests: name TAB hex, one per line. */
public class KafkaBytes {
    static void out(String name, ByteBuffer b) {
        ByteBuffer d = b.duplicate(); d.rewind();
        StringBuilder s = new StringBuilder();
        while (d.hasRemaining()) s.append(String.format("%02x", d.get()));
        System.out.println(name + "\t" + s);
    }
    static <T> Set<T> set(T... items) { return new LinkedHashSet<>(Arrays.asList(items)); }
    static TopicPartition tp(String t, int p) { return new TopicPartition(t, p); }

    public static void main(String[] a) {
        // ConnectProtocolCompatibilityTest
        String url = "leaderUrl:8083";
        out("connect.v0.metadata", ConnectProtocol.serializeMetadata(new ConnectProtocol.WorkerState(url, 1)));
        for (short v : new short[]{1, 2}) {
            ExtendedAssignment empty = new ExtendedAssignment(v, ConnectProtocol.Assignment.NO_ERROR, "leader", url, 1,
                Collections.emptySet(), Collections.emptySet(), Collections.emptySet(), Collections.emptySet(), 0);
            out("connect.v" + v + ".metadata", IncrementalCooperativeConnectProtocol.serializeMetadata(new ExtendedWorkerState(url, 1, empty), v == 2));
        }
        ConnectorTaskId t1x0 = new ConnectorTaskId("connector1", 0), t2x0 = new ConnectorTaskId("connector2", 0), t3x0 = new ConnectorTaskId("connector3", 0);
        out("connect.v0.assignment.leader", ConnectProtocol.serializeAssignment(new ConnectProtocol.Assignment(
            ConnectProtocol.Assignment.NO_ERROR, "leader", url, 1L, Arrays.asList("connector1", "connector3"), Collections.singletonList(t2x0))));
        out("connect.v0.assignment.member", ConnectProtocol.serializeAssignment(new ConnectProtocol.Assignment(
            ConnectProtocol.Assignment.NO_ERROR, "member", url, 1L, Collections.singletonList("connector2"), Arrays.asList(t1x0, t3x0))));
        out("connect.v1.assignment.leader", IncrementalCooperativeConnectProtocol.serializeAssignment(new ExtendedAssignment(
            (short) 1, ConnectProtocol.Assignment.NO_ERROR, "leader", url, 1L, Arrays.asList("connector1", "connector3"),
            Collections.singletonList(t2x0), Collections.emptyList(), Collections.emptyList(), 0), false));
        // DistributedHerderTest: a destroyed connector's connector and task revoked; CONFIG_MISMATCH
        ConnectorTaskId task1 = new ConnectorTaskId("sourceA", 1);
        out("connect.v2.assignment.revoked", IncrementalCooperativeConnectProtocol.serializeAssignment(new ExtendedAssignment(
            (short) 2, ConnectProtocol.Assignment.NO_ERROR, "leader", "leaderUrl", 2L, Collections.emptyList(), Collections.emptyList(),
            Collections.singletonList("sourceA"), Collections.singletonList(task1), 0), true));
        out("connect.v2.assignment.config-mismatch", IncrementalCooperativeConnectProtocol.serializeAssignment(new ExtendedAssignment(
            (short) 2, ConnectProtocol.Assignment.CONFIG_MISMATCH, "leader", "leaderUrl", 1L, Collections.emptyList(), Collections.emptyList(),
            Collections.emptyList(), Collections.emptyList(), 0), true));
        // a scheduled rebalance: a worker's work held back for 5 s (the delay of IncrementalCooperativeAssignor)
        out("connect.v1.assignment.delay", IncrementalCooperativeConnectProtocol.serializeAssignment(new ExtendedAssignment(
            (short) 1, ConnectProtocol.Assignment.NO_ERROR, "leader", url, 3L, Collections.singletonList("connector1"), Arrays.asList(t1x0),
            Collections.emptyList(), Collections.emptyList(), 5000), false));
        // WorkerCoordinatorIncrementalTest.testMetadataWithExistingAssignment: a worker's metadata carrying what it runs
        ExtendedAssignment running = new ExtendedAssignment((short) 1, ConnectProtocol.Assignment.NO_ERROR, "leader", "leaderUrl", 3L,
            Collections.singletonList("connector1"), Arrays.asList(t1x0, new ConnectorTaskId("connector2", 0)), Collections.emptyList(), Collections.emptyList(), 0);
        out("connect.v1.metadata.running", IncrementalCooperativeConnectProtocol.serializeMetadata(new ExtendedWorkerState("worker1:8083", 3L, running), false));

        // SubscriptionInfoTest
        ProcessId pid = new ProcessId(new UUID(0, 1));
        TaskId t00 = new TaskId(0, 0), t01 = new TaskId(0, 1), t10 = new TaskId(1, 0), t11 = new TaskId(1, 1), t20 = new TaskId(2, 0);
        Map<TaskId, Long> sums = new LinkedHashMap<>();
        sums.put(t00, -2L); sums.put(t01, -2L); sums.put(t10, -2L); sums.put(t11, 0L); sums.put(t20, 10L);
        Map<String, String> tags = new LinkedHashMap<>(); tags.put("t1", "v1"); tags.put("t2", "v2");
        for (int v = 1; v <= 11; v++) {
            SubscriptionInfo info = new SubscriptionInfo(v, v <= 2 ? -1 : 11, pid, v == 1 ? "ignoredUserEndpoint:80" : "localhost:80", sums, (byte) 0, 0,
                v == 11 ? tags : Collections.emptyMap());
            out("streams.subscription.v" + v, info.encode());
        }
        Map<TaskId, Long> named = new LinkedHashMap<>();
        named.put(new TaskId(0, 0, "topology0"), -2L); named.put(new TaskId(0, 1, "topology0"), -2L); named.put(new TaskId(1, 0, "topology0"), 5L);
        named.put(new TaskId(1, 1, "topology0"), 10_000L); named.put(new TaskId(0, 0, "topology1"), -2L); named.put(new TaskId(0, 1, "topology1"), 0L);
        named.put(new TaskId(0, 0, "topology2"), 10L); named.put(new TaskId(2, 0, "topology2"), 5L);
        out("streams.subscription.v10.named", new SubscriptionInfo(10, 11, pid, "localhost:80", named, (byte) 0, 0, Collections.emptyMap()).encode());

        // AssignmentInfoTest
        List<TaskId> active = Arrays.asList(t00, t01, t10, t10);
        Map<TaskId, Set<TopicPartition>> standby = new LinkedHashMap<>();
        standby.put(t10, set(tp("t1", 0), tp("t2", 0))); standby.put(t11, set(tp("t1", 1), tp("t2", 1)));
        Map<HostInfo, Set<TopicPartition>> activeHosts = new LinkedHashMap<>();
        activeHosts.put(new HostInfo("localhost", 8088), set(tp("t0", 0), tp("t1", 0), tp("t2", 0)));
        activeHosts.put(new HostInfo("localhost", 8089), set(tp("t0", 1), tp("t1", 1), tp("t2", 1)));
        Map<HostInfo, Set<TopicPartition>> standbyHosts = new LinkedHashMap<>();
        standbyHosts.put(new HostInfo("localhost", 8088), set(tp("t1", 0), tp("t2", 0)));
        standbyHosts.put(new HostInfo("localhost", 8089), set(tp("t1", 1), tp("t2", 1)));
        for (int v = 1; v <= 11; v++) {
            AssignmentInfo info = new AssignmentInfo(v, active, standby, activeHosts, standbyHosts, v >= 4 ? 2 : 0);
            if (v == 7) info.setNextRebalanceTime(1000L);  // shouldEncodeAndDecodeNextRebalanceTime
            out("streams.assignment.v" + v, info.encode());
        }
        List<TaskId> namedActive = Arrays.asList(new TaskId(0, 1, "topology0"), new TaskId(1, 0, "topology0"), new TaskId(1, 0, "topology0"),
            new TaskId(0, 1, "topology1"), new TaskId(0, 1, "topology1"), new TaskId(0, 0, "topology2"), new TaskId(2, 0, "topology2"));
        Map<TaskId, Set<TopicPartition>> namedStandby = new LinkedHashMap<>();
        namedStandby.put(new TaskId(0, 0, "topology0"), set(tp("t0-1", 0), tp("t0-2", 0)));
        namedStandby.put(new TaskId(0, 1, "topology0"), set(tp("t0-1", 1), tp("t0-2", 1)));
        namedStandby.put(new TaskId(0, 0, "topology1"), set(tp("t1-1", 0), tp("t1-2", 0)));
        out("streams.assignment.v10.named", new AssignmentInfo(10, 11, namedActive, namedStandby, activeHosts, standbyHosts, 2).encode());

        // __consumer_offsets and __transaction_state records, as CoordinatorRecordSerde writes them (MessageUtil.toVersionPrefixedBytes)
        // GroupCoordinatorRecordSerdeTest.testSerializeKey / testSerializeValue
        bytes("offsets.consumer-group-metadata.key", org.apache.kafka.common.protocol.MessageUtil.toVersionPrefixedBytes((short) 3,
            new org.apache.kafka.coordinator.group.generated.ConsumerGroupMetadataKey().setGroupId("group")));
        bytes("offsets.consumer-group-metadata.value", org.apache.kafka.common.protocol.MessageUtil.toVersionPrefixedBytes((short) 0,
            new org.apache.kafka.coordinator.group.generated.ConsumerGroupMetadataValue().setEpoch(10)));
        // GroupCoordinatorRecordHelpersTest.testNewOffsetCommitRecord: version 3 for a commit with a leader epoch
        bytes("offsets.offset-commit.key", org.apache.kafka.common.protocol.MessageUtil.toVersionPrefixedBytes((short) 1,
            new org.apache.kafka.coordinator.group.generated.OffsetCommitKey().setGroup("group-id").setTopic("foo").setPartition(1)));
        bytes("offsets.offset-commit.value", org.apache.kafka.common.protocol.MessageUtil.toVersionPrefixedBytes((short) 3,
            new org.apache.kafka.coordinator.group.generated.OffsetCommitValue().setOffset(100L).setLeaderEpoch(10).setMetadata("metadata").setCommitTimestamp(1234L)));
        // TransactionLogTest.shouldReadWriteMessages: "one", producer id 1, Ongoing, five partitions
        bytes("transactions.key", org.apache.kafka.common.protocol.MessageUtil.toVersionPrefixedBytes((short) 0,
            new org.apache.kafka.coordinator.transaction.generated.TransactionLogKey().setTransactionalId("one")));
        List<org.apache.kafka.coordinator.transaction.generated.TransactionLogValue.PartitionsSchema> parts = Arrays.asList(
            new org.apache.kafka.coordinator.transaction.generated.TransactionLogValue.PartitionsSchema().setTopic("topic1").setPartitionIds(Arrays.asList(0, 1)),
            new org.apache.kafka.coordinator.transaction.generated.TransactionLogValue.PartitionsSchema().setTopic("topic2").setPartitionIds(Arrays.asList(0, 1, 2)));
        bytes("transactions.value", org.apache.kafka.common.protocol.MessageUtil.toVersionPrefixedBytes((short) 1,
            new org.apache.kafka.coordinator.transaction.generated.TransactionLogValue().setProducerId(1L).setProducerEpoch((short) 0)
                .setTransactionTimeoutMs(1000).setTransactionStatus((byte) 1).setTransactionPartitions(parts)
                .setTransactionLastUpdateTimestampMs(0L).setTransactionStartTimestampMs(0L)));
    }

    static void bytes(String name, byte[] b) { out(name, ByteBuffer.wrap(b)); }
}

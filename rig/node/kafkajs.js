// The rig's KafkaJS workload driver: `node kafkajs.js` reads a plan (JSON) on standard input and writes what the
// clients did as JSON lines on standard output; rig/kafkajs.py turns them into manifest lines. Bytes travel as base64
// both ways, so the manifest's own encoding stays in one place (rig/manifest.py). KafkaJS's log goes to standard error.
//
// `node kafkajs.js LIBRARY`: LIBRARY is a folder of node_modules, kafkajs (2.2.4) or kafkajs-1.12 (package.json).
// plan: {"bootstrap": "HOST:PORT", "registry": URL|absent, "acts": [ACT, ...]}, acts run in order:
//   {"act": "create-topics", "client_id", "topics": {NAME: PARTITIONS}}
//   {"act": "register", "schema": TEXT, "type": "AVRO"|"JSON"|"PROTOBUF", "subject", "as": NAME}
//       @kafkajs/confluent-schema-registry registers the schema with the plan's registry; NAME stands for its id
//   {"act": "produce", "client_id", "topic", "records": [RECORD], "acks", "idempotent", "batch", "interval_ms"}
//       batch: one send() for every record; otherwise one send() per record, interval_ms apart
//   {"act": "consume", "client_id", "group", "topic", "members": [NAME], "expected", "seconds", "max_wait_ms",
//    "session_timeout_ms", "rebalance_timeout_ms", "heartbeat_ms", "restart_on_crash_ms", "decode"}
//       members of one group until `expected` records or `seconds`; restart_on_crash_ms: the application starts a
//       crashed member again after that long, as a service does when the library gives up (KafkaJS 1.12 does not);
//       decode: each value goes through the registry library's decode(), its result in the line as `deserialized`,
//       or its error as `deserializer_error`
// RECORD: {"key": B64|null, "value": B64|null, "headers": [[KEY, B64]], "partition": N|null, "timestamp": MS|null,
//          "encode": {"schema": NAME, "value": ANY, "cut": BOOL}|absent, "decoded": ANY|absent}
//       encode: the value is the registry library's encode() of `value` with the schema registered as NAME (cut: its
//       first half only), and the produced line's `decoded` (passed through as given) gets that schema's id
'use strict'

const library = process.argv[2] || 'kafkajs'
const { Kafka, logLevel } = require(`./node_modules/${library}`)

const emit = line => process.stdout.write(JSON.stringify(line) + '\n')
const b64 = buffer => (buffer === null || buffer === undefined ? null : Buffer.from(buffer).toString('base64'))
const bytes = text => (text === null || text === undefined ? null : Buffer.from(text, 'base64'))
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

function errText(e) {
  const code = e.code !== undefined ? `${e.code} ` : ''
  return e.type ? `error ${code}${e.type}: ${e.message}` : `error ${e.name}: ${e.message}`
}

const LEVELS = Object.fromEntries(Object.entries(logLevel).map(([name, level]) => [level, name]))
const toStderr = () => ({ namespace, level, log }) => {
  const { message, timestamp, logger, stack, ...extra } = log
  process.stderr.write(`${library} ${LEVELS[level]} [${namespace || ''}] ${message} ${JSON.stringify(extra)}\n`)
}

const registries = new Map()
const registered = new Map()
const SERDES = '@kafkajs/confluent-schema-registry'

/** The registry library's client of the plan's registry for `side` (producer or consumer), made once: the
 * consumer's is its own, with an empty cache, so its schema lookups (GET /schemas/ids/N) are on the wire. */
function schemaRegistry(plan, side) {
  if (!registries.has(side)) {
    const { SchemaRegistry } = require(`./node_modules/${SERDES}`)
    registries.set(side, new SchemaRegistry({ host: plan.registry, clientId: `kdrig-kafkajs-${side}` }))
  }
  return registries.get(side)
}

const serdesName = () => `${SERDES} ${require(`./node_modules/${SERDES}/package.json`).version} (node ${process.version})`

async function register(plan, act) {
  const { SchemaType } = require(`./node_modules/${SERDES}`)
  const schema = { type: SchemaType[act.type || 'AVRO'], schema: act.schema }
  const fields = { client: serdesName(), subject: act.subject, as: act.as }
  try {
    const { id } = await schemaRegistry(plan, 'producer').register(schema, { subject: act.subject })
    registered.set(act.as, id)
    emit({ kind: 'op', op: 'register', ...fields, id, result: 'ok' })
  } catch (e) {
    emit({ kind: 'op', op: 'register', ...fields, id: null, result: errText(e) })
  }
}

/** A record's value made by the registry library's encode() (plan RECORD's `encode`), and the id it framed it with. */
async function encoded(plan, record) {
  const { schema, value, cut } = record.encode
  const id = registered.get(schema)
  const data = await schemaRegistry(plan, 'producer').encode(id, value)
  return { ...record, value: b64(cut ? data.subarray(0, Math.floor(data.length / 2)) : data), decoded: { ...record.decoded, schema_id: id } }
}

function client(plan, clientId) {
  return new Kafka({ clientId, brokers: [plan.bootstrap], logLevel: logLevel.WARN, logCreator: toStderr })
}

async function attempt(op, fn, fields = {}) {
  try {
    const value = await fn()
    emit({ kind: 'op', op, ...fields, result: 'ok' })
    return value
  } catch (e) {
    emit({ kind: 'op', op, ...fields, result: errText(e) })
    return undefined
  }
}

async function createTopics(plan, act) {
  const admin = client(plan, act.client_id || 'kdrig-setup').admin()
  await admin.connect()
  const topics = Object.entries(act.topics).map(([topic, numPartitions]) => ({ topic, numPartitions }))
  await attempt('create_topics', () => admin.createTopics({ topics, waitForLeaders: true }), {
    topics: Object.keys(act.topics),
    partitions: Object.values(act.topics),
  })
  await admin.disconnect()
}

function message(record) {
  const out = { key: bytes(record.key), value: bytes(record.value) }
  if (record.headers && record.headers.length) {
    out.headers = {}
    for (const [key, value] of record.headers) {
      const earlier = out.headers[key]
      out.headers[key] = earlier === undefined ? bytes(value) : [].concat(earlier, [bytes(value)])
    }
  }
  if (record.partition !== null && record.partition !== undefined) out.partition = record.partition
  if (record.timestamp !== null && record.timestamp !== undefined) out.timestamp = String(record.timestamp)
  return out
}

function produced(act, record, meta, error) {
  const extra = record.decoded === undefined ? {} : { decoded: record.decoded }
  emit({
    kind: 'produced',
    client_id: act.client_id,
    topic: act.topic,
    partition: meta ? meta.partition : record.partition,
    offset: meta ? meta.offset : null,
    timestamp: record.timestamp,
    key: record.key,
    value: record.value,
    headers: record.headers || [],
    acks: act.acks,
    idempotent: Boolean(act.idempotent),
    ...extra,
    ...(error ? { error } : {}),
  })
}

/** Each record's partition and offset: a partition's base offset, plus the record's place among that partition's. */
function placed(records, results) {
  const base = new Map(results.map(r => [r.partition, Number(r.baseOffset)]))
  const seen = new Map()
  return records.map(record => {
    const partition = record.partition === null || record.partition === undefined ? results[0].partition : record.partition
    const index = seen.get(partition) || 0
    seen.set(partition, index + 1)
    const first = base.get(partition)
    return { partition, offset: first === undefined || first < 0 ? null : first + index }
  })
}

async function produce(plan, act) {
  const producer = client(plan, act.client_id).producer({ idempotent: Boolean(act.idempotent), maxInFlightRequests: act.idempotent ? 1 : undefined })
  await attempt('connect', () => producer.connect(), { client_id: act.client_id, idempotent: Boolean(act.idempotent) })
  const acks = act.acks === 'all' ? -1 : act.acks
  const ready = []
  for (const record of act.records) ready.push(record.encode ? await encoded(plan, record) : record)
  const sends = act.batch ? [ready] : ready.map(record => [record])
  for (const records of sends) {
    try {
      const results = await producer.send({ topic: act.topic, acks, messages: records.map(message) })
      placed(records, results).forEach((meta, i) => produced(act, records[i], meta, null))
    } catch (e) {
      records.forEach(record => produced(act, record, null, errText(e)))
    }
    if (act.interval_ms) await sleep(act.interval_ms)
  }
  await attempt('disconnect', () => producer.disconnect(), { client_id: act.client_id })
}

async function consumed(plan, act, member, topic, partition, m) {
  const headers = []
  for (const [key, value] of Object.entries(m.headers || {})) {
    for (const one of Array.isArray(value) ? value : [value]) headers.push([key, b64(one)])
  }
  emit({
    kind: 'consumed',
    group: act.group,
    member,
    topic,
    partition,
    offset: Number(m.offset),
    timestamp: Number(m.timestamp),
    key: b64(m.key),
    value: b64(m.value),
    headers,
    ...(act.decode ? await deserialized(plan, m.value) : {}),
  })
}

/** What the registry library's decode() makes of a value, or its words when it fails (the ground truth). */
async function deserialized(plan, value) {
  try {
    return { deserialized: await schemaRegistry(plan, 'consumer').decode(value) }
  } catch (e) {
    return { deserializer_error: `${e.name}: ${e.message}` }
  }
}

async function consume(plan, act) {
  let count = 0
  let stopping = false
  const running = new Map()
  const start = async member => {
    const consumer = client(plan, `${act.client_id}-${member}`).consumer({
      groupId: act.group,
      maxWaitTimeInMs: act.max_wait_ms,
      sessionTimeout: act.session_timeout_ms || 6000,
      rebalanceTimeout: act.rebalance_timeout_ms || 6000,
      heartbeatInterval: act.heartbeat_ms || 500,
      retry: { retries: 2 },
    })
    running.set(member, consumer)
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) =>
      emit({
        kind: 'op',
        op: 'joined',
        group: act.group,
        member,
        member_id: payload.memberId,
        leader: payload.isLeader,
        assignment: payload.memberAssignment,
        result: 'ok',
      })
    )
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      emit({ kind: 'op', op: 'crashed', group: act.group, member, restart: Boolean(payload.restart), result: errText(payload.error) })
      if (act.restart_on_crash_ms && !stopping && !payload.restart) {
        setTimeout(() => !stopping && start(member), act.restart_on_crash_ms)
      }
    })
    await attempt('subscribe', async () => {
      await consumer.connect()
      await consumer.subscribe({ topic: act.topic, fromBeginning: true })
      await consumer.run({
        eachMessage: async ({ topic, partition, message: m }) => {
          count += 1
          await consumed(plan, act, member, topic, partition, m)
        },
      })
    }, { group: act.group, member })
  }
  for (const member of act.members) await start(member)
  const deadline = Date.now() + act.seconds * 1000
  while (Date.now() < deadline && (act.expected === undefined || count < act.expected)) await sleep(100)
  stopping = true
  for (const [member, consumer] of running) await attempt('close', () => consumer.disconnect(), { group: act.group, member })
}

const ACTS = { 'create-topics': createTopics, register, produce, consume }

async function main() {
  const chunks = []
  for await (const chunk of process.stdin) chunks.push(chunk)
  const plan = JSON.parse(Buffer.concat(chunks).toString())
  for (const act of plan.acts) await ACTS[act.act](plan, act)
}

main().then(
  () => process.exit(0),
  e => {
    process.stderr.write(`kafkajs driver failed: ${e.stack}\n`)
    process.exit(1)
  }
)

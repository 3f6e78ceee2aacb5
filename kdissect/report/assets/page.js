/* kdissect report: draws the page from the report's data (the JSON in #kd-data).
   Every string from the capture is set as text (textContent, text nodes, canvas fillText, SVG text), never as markup.
   window.KD holds the charts and the chosen finding, for a reader's console and for the tests. */
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("kd-data").textContent);
  const KD = (window.KD = { data: D, charts: [], chosen: null, ready: false });
  const main = document.getElementById("kd");
  const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f", "#393b79", "#ad494a", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd"];
  const KINDS = {
    join: ["#1565c0", "JoinGroup (the line: waiting for the generation)"],
    sync: ["#2e7d32", "SyncGroup (assignment)"],
    leave: ["#6d4c41", "LeaveGroup"],
    rejoin: ["#ef6c00", "told REBALANCE_IN_PROGRESS: rejoin"],
    removed: ["#c62828", "removed by the coordinator"],
  };

  // ---- building blocks --------------------------------------------------------------------------------------

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  const int = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
  const num = (v) => (v === null || v === undefined ? "–" : String(v));
  const utc = (s) => (s === null || s === undefined ? "–" : new Date(s * 1000).toISOString().replace("T", " ").replace("Z", ""));
  function seconds(s) {
    if (s >= 3600) return (s / 3600).toFixed(1) + " h";
    if (s >= 60) return (s / 60).toFixed(1) + " min";
    if (s >= 1) return s.toFixed(s >= 10 ? 1 : 3) + " s";
    return +(s * 1000).toFixed(3) + " ms";
  }
  function bytes(n) {
    const units = ["B", "KB", "MB", "GB", "TB"];
    let i = 0;
    while (Math.abs(n) >= 1000 && i < units.length - 1) { n /= 1000; i++; }
    return (i ? n.toFixed(1) : String(Math.round(n))) + " " + units[i];
  }
  const plural = (n, word) => int(n) + " " + word + (n === 1 ? "" : "s");
  function shortened(text, most) {
    return text.length <= most ? text : text.slice(0, Math.ceil(most / 2) - 1) + "…" + text.slice(text.length - Math.floor(most / 2));
  }
  function guarded(name, draw) {
    try { draw(); } catch (error) {
      console.error("kdissect report: the " + name + " could not be drawn", error);
      main.append(el("p", { class: "note" }, "The " + name + " could not be drawn: " + error));
    }
  }

  // ---- the time axis ----------------------------------------------------------------------------------------

  const AXIS = D.axis;
  const X = Array.from({ length: AXIS.count }, (_, i) => AXIS.start + i * AXIS.width);
  const END = AXIS.start + AXIS.count * AXIS.width;
  const perSecond = (values) => values.map((v) => (v === null ? null : v / AXIS.width));
  const positive = (values) => values.map((v) => (v === null || v <= 0 ? null : v));
  let syncing = false;

  function syncScale(u, key) {
    if (key !== "x" || syncing) return;
    syncing = true;
    const { min, max } = u.scales.x;
    for (const other of KD.charts) if (other !== u) other.setScale("x", { min, max });
    syncing = false;
  }

  function drawBand(u) {
    const chosen = KD.chosen;
    if (!chosen || !chosen.window) return;
    const { left, top, width, height } = u.bbox;
    let x0 = u.valToPos(chosen.window[0], "x", true);
    let x1 = Math.max(u.valToPos(chosen.window[1], "x", true), x0 + 2 * uPlot.pxRatio);
    x0 = Math.max(left, x0);
    x1 = Math.min(left + width, x1);
    if (x1 <= x0) return;
    u.ctx.save();
    u.ctx.fillStyle = "rgba(198, 40, 40, 0.10)";
    u.ctx.fillRect(x0, top, x1 - x0, height);
    u.ctx.restore();
  }

  function drawMarks(u) {
    const chosen = KD.chosen;
    if (!chosen) return;
    const { left, top, width, height } = u.bbox;
    const ctx = u.ctx, r = 4 * uPlot.pxRatio, bottom = top + height;
    ctx.save();
    ctx.fillStyle = "#c62828";
    for (const [bucket] of chosen.marks) {
      const x = u.valToPos(AXIS.start + (bucket + 0.5) * AXIS.width, "x", true);
      if (x < left || x > left + width) continue;
      ctx.beginPath();
      ctx.moveTo(x, bottom - 2 * r);
      ctx.lineTo(x - r, bottom);
      ctx.lineTo(x + r, bottom);
      ctx.closePath();
      ctx.fill();
    }
    ctx.restore();
  }

  function timeLabels(u, splits, axis, space, incr) {
    return splits.map((s, i) => {
      const iso = new Date(s * 1000).toISOString();
      const text = incr >= 86400 ? iso.slice(5, 10) : incr >= 60 ? iso.slice(11, 16) : incr >= 1 ? iso.slice(11, 19) : iso.slice(11, 23);
      const newDay = i === 0 || new Date(splits[i - 1] * 1000).toISOString().slice(0, 10) !== iso.slice(0, 10);
      return newDay && incr < 86400 ? iso.slice(5, 10) + " " + text : text;
    });
  }
  const Y_AXIS = 180;  // every chart's plot starts at the same x: one time axis down the page
  const utcDate = (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC");  // ticks fall on whole UTC units
  const X_AXIS = { stroke: "#5b6473", grid: { stroke: "#eef1f5" }, ticks: { stroke: "#d9dee7" }, values: timeLabels, space: 70 };

  function chartWidth() { return Math.max(480, Math.min(main.clientWidth - 8, 1200)); }

  function chart(box, series, values, options) {
    const o = options || {};
    const yAxis = { label: o.unit || "", labelSize: 30, stroke: "#5b6473", size: Y_AXIS, grid: { stroke: "#eef1f5" }, ticks: { stroke: "#d9dee7" } };
    if (o.values) yAxis.values = o.values;
    if (o.log) {  // a line at each power of ten, not at every multiple of one
      yAxis.splits = (u, axis, min, max) => {
        const out = [];
        for (let p = Math.floor(Math.log10(min)); p <= Math.ceil(Math.log10(max)); p++) if (10 ** p >= min * 0.999 && 10 ** p <= max * 1.001) out.push(10 ** p);
        return out;
      };
      yAxis.values = (u, splits) => splits.map((v) => (v === null ? null : v >= 1 ? int(v) : String(+v.toPrecision(1))));
    }
    const opts = {
      width: chartWidth(),
      height: o.height || 210,
      tzDate: utcDate,
      legend: { live: series.length <= 8 },
      cursor: { sync: { key: "kd" }, drag: { x: true, y: false } },
      scales: { x: { time: true }, y: o.log ? { distr: 3, log: 10 } : {} },
      axes: [X_AXIS, yAxis],
      series: [{ label: "UTC", value: (u, v) => (v === null ? "–" : utc(v)) }].concat(
        series.map((s, i) => {
          const color = s.color || PALETTE[i % PALETTE.length];
          return {
            label: s.label,
            stroke: color,
            width: s.points ? 0 : 1.5,
            dash: s.dash,
            spanGaps: false,
            // isolated values between empty buckets draw no line: they show as dots
            points: s.points ? { show: true, size: 7, fill: s.hollow ? "#fff" : color, width: 1.5 } : { show: o.dots === true, size: 5, fill: color },
            value: (u, v) => (v === null ? "–" : o.format ? o.format(v) : String(+v.toFixed(3))),
          };
        })
      ),
      hooks: { setScale: [syncScale], drawClear: [drawBand], draw: [drawMarks] },
    };
    const u = new uPlot(opts, [X].concat(values), box);
    KD.charts.push(u);
    return u;
  }

  function section(title, note) {
    const box = el("div", { class: "chart" }, el("h3", null, title), note ? el("div", { class: "dim" }, note) : null);
    timelines.append(box);
    return box;
  }

  // ---- the header and the verdict ---------------------------------------------------------------------------

  const V = D.verdict;
  document.title = "kdissect report: " + D.captures.join(" + ");
  main.append(el("h1", null, "kdissect report: " + D.captures.join(" + ")));
  main.append(el("div", { class: "census" },
    seconds(V.span_ms / 1000) + " · " + plural(V.connections, "connection") + " · " + plural(V.exchanges, "exchange") + " · " +
    plural(V.clients, "client") + " · " + plural(V.groups, "group") + (D.filter ? " · filter -Y " + D.filter : "")));
  if (D.captures.length > 1)
    main.append(el("div", { class: "note" }, "Several captures read as one, merged by time as `mergecap -w MERGED.pcap " +
      D.captures.join(" ") + "` merges them: exchange ids and the commands below count in that merge."));
  for (const note of D.notes) main.append(el("div", { class: "note" }, note));

  const problems = D.findings.filter((f) => f.severity !== "info");
  const worst = problems.some((f) => f.severity === "error") ? "error" : problems.length ? "warning" : "ok";
  main.append(el("div", { class: "verdict " + worst, id: "verdict" }, "Doctor: " + V.verdict));

  const findingBoxes = new Map();
  function finding(f, open) {
    const e = f.evidence;
    const rows = [];
    const add = (label, value) => { if (value !== null && value !== undefined && value !== "") rows.push(el("dt", null, label), el("dd", null, value)); };
    add("counts", plural(e.count, e.unit) + (e.unit === "exchange" && f.kept < e.count ? " (the first " + int(f.kept) + " marked)" : ""));
    add("exchanges", e.exchanges.join(", ") + (e.exchanges.length < e.count && e.unit === "exchange" ? ", …" : ""));
    add("connections", e.connections.join(", "));
    add("client ids", e.client_ids.join(", "));
    add("groups", e.groups.join(", "));
    add("partitions", e.partitions.map((p) => p.topic + (p.partition === null ? "" : "/" + p.partition)).join(", "));
    add("when", e.first ? e.first.replace("T", " ").replace("Z", "") + " to " + e.last.replace("T", " ").replace("Z", "") + " UTC" : null);
    add("client software", f.software);
    add("caused by", f.caused_by.join(", "));
    add("filter", e.filter ? el("code", null, e.filter) : null);
    add("count again", f.check ? el("code", null, f.check.replace(/^check: /, "")) : null);
    if (e.exchanges.length) add("open one", el("code", null, D.show + " " + e.exchanges[0]));
    const mark = el("button", { class: "mark", onclick: () => choose(KD.chosen === f ? null : f) }, "Mark its evidence on the timelines and list it");
    const box = el("details", { class: "finding", "data-id": f.id, open: open ? "" : null },
      el("summary", null, el("span", { class: "sev " + f.severity }, f.severity), el("span", { class: "fid" }, f.id), el("span", { class: "title" }, f.title)),
      el("div", { class: "body" },
        el("p", null, f.explanation),
        el("p", null, el("b", null, "Advice "), f.advice),
        el("dl", { class: "evidence" }, rows),
        (f.marks.length || f.window) ? mark : null));
    findingBoxes.set(f, box);
    return box;
  }

  const findings = el("section", { id: "findings" });
  problems.forEach((f, i) => findings.append(finding(f, i < 2)));
  const infos = D.findings.filter((f) => f.severity === "info");
  if (infos.length) {
    const more = el("details", { class: "infos" }, el("summary", null, plural(infos.length, "info finding") + ": what is normal but worth knowing"));
    infos.forEach((f) => more.append(finding(f, false)));
    findings.append(more);
  }
  main.append(findings);

  // ---- the evidence of the chosen finding -------------------------------------------------------------------

  const chosenLabel = el("span", { class: "chosen" });
  const evidence = el("section", { id: "evidence" });

  function choose(f) {
    if (KD.chosen) findingBoxes.get(KD.chosen).classList.remove("chosen");
    KD.chosen = f;
    evidence.replaceChildren();
    chosenLabel.textContent = f ? "marked: " + f.id + " (" + plural(f.evidence.count, f.evidence.unit) + ")" : "";
    clear.style.display = f ? "" : "none";
    if (f) {
      findingBoxes.get(f).classList.add("chosen");
      const shown = f.listed.length;
      evidence.append(el("h3", null, "Evidence of " + f.id + ": " + plural(f.evidence.count, f.evidence.unit) +
        (shown < f.kept ? ", the first " + shown + " listed" : "")));
      if (shown) {
        evidence.append(table("evidence-list", [
          { name: "#", num: true, get: (r) => r[0] },
          { name: "started (UTC)", get: (r) => utc(r[1]) },
          { name: "API", get: (r) => r[2] },
          { name: "client id", get: (r) => r[3] },
          { name: "connection", get: (r) => r[4] },
          { name: "latency ms", num: true, get: (r) => r[5], fmt: num },
          { name: "in line ms", num: true, get: (r) => r[6], fmt: num },
          { name: "status", get: (r) => r[7] },
          { name: "error", get: (r) => r[8] || "" },
        ], f.listed));
        evidence.append(el("div", { class: "dim" }, "Open one: ", el("code", null, D.show + " " + f.listed[0][0])));
      } else {
        evidence.append(el("div", { class: "dim" }, "No exchange to list: the finding is about connections or the capture itself; its time window is marked."));
      }
    }
    evidence.style.display = f ? "block" : "none";
    for (const u of KD.charts) u.redraw(false);
    if (f) evidence.scrollIntoView({ block: "nearest" });
  }

  // ---- timelines --------------------------------------------------------------------------------------------

  main.append(el("h2", null, "Timelines"));
  const clear = el("button", { onclick: () => choose(null), style: "display:none" }, "clear the marks");
  function view(change) {
    const u = KD.charts[0];
    if (!u) return;
    const { min, max } = u.scales.x;
    const [a, b] = change(min, max, max - min);
    const lo = Math.max(X[0], a), hi = Math.min(END, b);
    if (hi > lo) u.setScale("x", { min: lo, max: hi });
  }
  const toolbar = el("div", { class: "toolbar" },
    el("button", { onclick: () => view((a, b, w) => [a + w / 4, b - w / 4]), title: "zoom in" }, "+"),
    el("button", { onclick: () => view((a, b, w) => [a - w / 2, b + w / 2]), title: "zoom out" }, "−"),
    el("button", { onclick: () => view((a, b, w) => [a - w / 4, b - w / 4]), title: "earlier" }, "◀"),
    el("button", { onclick: () => view((a, b, w) => [a + w / 4, b + w / 4]), title: "later" }, "▶"),
    el("button", { onclick: () => view(() => [X[0], END]) }, "whole capture"),
    el("span", { class: "dim" }, "Drag across a chart to zoom in; every chart follows. Buckets of " + seconds(AXIS.width) + "."),
    chosenLabel, clear);
  main.append(toolbar, evidence);
  const timelines = el("section", { id: "timelines" });
  main.append(timelines);

  function apiCharts() {
    if (!X.length) { timelines.append(el("p", { class: "dim" }, "No exchange: nothing to draw in time.")); return; }
    chart(section("Exchanges per second, by API", "When each request was sent."), D.apis.map((a) => ({ label: a.name || "others" })),
      D.apis.map((a) => perSecond(a.count)), { unit: "exchanges/s" });
    const served = D.apis.filter((a) => a.service_ms.some((v) => v > 0));
    const polls = D.apis.filter((a) => a.polls.some((v) => v > 0));
    if (served.length || polls.length)
      chart(section("Service time, by API: the broker's own time (the slowest in each bucket)",
        "After any wait in line behind an earlier request on the connection. Long polls (Fetches answered empty after their MaxWaitMs) are the dots."),
        served.map((a) => ({ label: a.name || "others" })).concat(polls.map((a) => ({ label: (a.name || "others") + " long polls", points: true, color: "#9e9e9e" }))),
        served.map((a) => positive(a.service_ms)).concat(polls.map((a) => positive(a.poll_ms))), { unit: "ms", log: true, dots: true });
    const queued = D.apis.filter((a) => a.queue_ms.some((v) => v > 0));
    if (queued.length)
      chart(section("Time in line, by API (the longest in each bucket)",
        "A broker answers a connection's requests one at a time: a request sent while an earlier one was out waited this long before the broker took it."),
        queued.map((a) => ({ label: a.name || "others" })), queued.map((a) => positive(a.queue_ms)), { unit: "ms", log: true, dots: true });
    if (D.errors.length)
      chart(section("Errors and failures", "Error codes in responses (each occurrence), and requests unanswered, malformed or without their request; per bucket of " + seconds(AXIS.width) + "."),
        D.errors.map((e) => ({ label: e.name || "others", points: true })), D.errors.map((e) => positive(e.count)), { unit: "in the bucket" });
    else section("Errors and failures").append(el("div", { class: "empty" }, "No error code and no failed exchange."));
  }

  function lanes(g) {
    const rows = g.members.length + 1;
    const box = section("Group " + g.name + ": members and generations",
      plural(g.rounds.length, "rebalance") + ", " + plural(g.members.length, "member") +
      (g.dropped ? "; " + int(g.dropped) + " later moves not drawn" : "") + ". Hover a mark for what happened.");
    const legend = el("div", { class: "legend-lanes" }, Object.entries(KINDS).map(([, [color, label]]) => el("span", null, el("i", { style: "background:" + color }), label)),
      el("span", null, el("i", { style: "background:#bbdefb" }), "a rebalance, to its generation's last SyncGroup"));
    box.append(legend);
    const labels = ["generations"].concat(g.members.map(([member, client]) =>
      member.startsWith(client) && client ? shortened(client, 17) + " …" + member.slice(-6) : shortened((client ? client + " " : "") + member, 24)));
    const yOf = (u, row) => u.valToPos(rows - row - 0.5, "y", true);
    const last = X.length ? END : 0;
    function draw(u) {
      const ctx = u.ctx, pr = uPlot.pxRatio, { left, width } = u.bbox;
      const xOf = (t) => u.valToPos(t, "x", true);
      ctx.save();
      ctx.beginPath();
      ctx.rect(left, u.bbox.top, width, u.bbox.height);
      ctx.clip();
      for (const r of g.rounds) {
        const x0 = xOf(r.start), x1 = Math.max(xOf(r.end === null ? last : r.end), x0 + 2 * pr), y = yOf(u, 0);
        ctx.fillStyle = r.completed ? "#bbdefb" : "#ffe0b2";
        ctx.fillRect(x0, y - 8 * pr, x1 - x0, 16 * pr);
        if (x1 - x0 > 40 * pr) {
          ctx.fillStyle = "#0d47a1";
          ctx.font = 11 * pr + "px system-ui, sans-serif";
          ctx.fillText(r.generation === null ? "no generation" : "gen " + r.generation, x0 + 3 * pr, y + 4 * pr);
        }
      }
      for (const [kind, lane, t, end] of g.moves) {
        const color = KINDS[kind][0], y = yOf(u, lane + 1), x = xOf(t), s = 4.5 * pr;
        ctx.fillStyle = color;
        ctx.strokeStyle = color;
        if (end !== null && (kind === "join" || kind === "sync")) {
          ctx.globalAlpha = 0.35;
          ctx.fillRect(x, y - 2 * pr, Math.max(xOf(end) - x, pr), 4 * pr);
          ctx.globalAlpha = 1;
        }
        ctx.beginPath();
        if (kind === "join") { ctx.moveTo(x, y - s); ctx.lineTo(x - s, y + s); ctx.lineTo(x + s, y + s); ctx.closePath(); ctx.fill(); }
        else if (kind === "sync") { ctx.arc(x, y, s * 0.8, 0, 2 * Math.PI); ctx.fill(); }
        else if (kind === "leave") { ctx.lineWidth = 2 * pr; ctx.moveTo(x - s, y - s); ctx.lineTo(x + s, y + s); ctx.moveTo(x + s, y - s); ctx.lineTo(x - s, y + s); ctx.stroke(); }
        else if (kind === "rejoin") { ctx.moveTo(x, y - s); ctx.lineTo(x + s, y); ctx.lineTo(x, y + s); ctx.lineTo(x - s, y); ctx.closePath(); ctx.fill(); }
        else { ctx.fillRect(x - s, y - s, 2 * s, 2 * s); }
      }
      ctx.restore();
    }
    const tip = el("div", { class: "tip" });
    document.body.append(tip);
    function hover(u) {
      const { left, top } = u.cursor;
      if (left === undefined || left < 0) { tip.style.display = "none"; return; }
      const row = rows - 0.5 - u.posToVal(top, "y");
      let text = null, best = 7;
      if (Math.abs(row) < 0.5) {
        for (const r of g.rounds) {
          const x0 = u.valToPos(r.start, "x"), x1 = u.valToPos(r.end === null ? last : r.end, "x");
          if (left >= x0 - 3 && left <= x1 + 3) {
            text = (r.generation === null ? "a rebalance the capture ended in" : "generation " + r.generation) + ": " + utc(r.start) +
              (r.end === null ? "" : ", " + seconds(r.end - r.start)) + ", " + plural(r.members, "member") + "\n" +
              Object.entries(r.reasons).map(([why, n]) => why + (n > 1 ? " ×" + n : "")).join("\n");
          }
        }
      } else {
        for (const [kind, lane, t, end, id, note] of g.moves) {
          if (Math.abs(lane + 1 - row) > 0.5) continue;
          const d = Math.abs(u.valToPos(t, "x") - left);
          if (d < best) {
            best = d;
            const [member, client] = g.members[lane];
            text = KINDS[kind][1] + ": " + (client ? client + " " : "") + member + "\n" + utc(t) +
              (end !== null ? " → answered after " + seconds(end - t) : "") + "\n" + note + "\nexchange " + id + ": " + D.show + " " + id;
          }
        }
      }
      if (text === null) { tip.style.display = "none"; return; }
      const rect = u.over.getBoundingClientRect();
      tip.textContent = text;
      tip.style.display = "block";
      tip.style.left = Math.min(rect.left + left + 14, window.innerWidth - 530) + "px";
      tip.style.top = rect.top + top + 14 + "px";
    }
    const u = new uPlot({
      width: chartWidth(),
      height: Math.min(70 + rows * 24, 900),
      tzDate: utcDate,
      legend: { show: false },
      cursor: { sync: { key: "kd" }, drag: { x: true, y: false }, points: { show: false } },
      scales: { x: { time: true }, y: { auto: false, range: [0, rows] } },
      axes: [
        X_AXIS,
        { label: "members", labelSize: 30, stroke: "#1d2330", size: Y_AXIS, gap: 6, grid: { stroke: "#eef1f5" }, splits: () => labels.map((_, i) => rows - i - 0.5), values: (u, splits) => splits.map((s) => labels[Math.round(rows - 0.5 - s)]) },
      ],
      series: [{}, { label: "lanes", stroke: "transparent", points: { show: false } }],
      hooks: { setScale: [syncScale], drawClear: [drawBand], draw: [draw, drawMarks], setCursor: [hover] },
    }, [X, X.map(() => null)], box);
    u.over.addEventListener("mouseleave", () => { tip.style.display = "none"; });
    KD.charts.push(u);
  }

  function groupCharts() {
    const moving = D.groups.filter((g) => g.moves.length || g.rounds.length);
    if (!moving.length) {
      section("Consumer groups").append(el("div", { class: "empty" },
        D.groups.length ? "No member joined, synced, left or was removed (the groups' commits are in the inventory)." : "No consumer group in this capture."));
      return;
    }
    moving.slice(0, 12).forEach(lanes);
    if (moving.length > 12) timelines.append(el("p", { class: "dim" }, plural(moving.length - 12, "more group") + " with fewer moves not drawn (the inventory lists them)."));
  }

  function flowCharts() {
    if (!X.length) return;
    if (D.lags.length)
      chart(section("Consumer lag, by partition (records behind the high watermark; the most in each bucket)",
        "From each Fetch answer: the high watermark less the offset the consumer asked for, as the doctor's consumer.lag measures it."),
        D.lags.map((l) => ({ label: l.topic + "/" + l.partition + " " + l.consumer })), D.lags.map((l) => l.lag), { unit: "records", dots: true });
    else section("Consumer lag").append(el("div", { class: "empty" }, "No Fetch answered with a high watermark."));
    const any = (values) => values.some((v) => v > 0);
    if (D.topics.some((t) => any(t.produced_bytes) || any(t.fetched_bytes))) {
      const series = [], values = [];
      D.topics.forEach((t, i) => {
        const color = PALETTE[i % PALETTE.length], name = t.name === null ? "others" : t.name;
        series.push({ label: name + " produced", color }, { label: name + " fetched", color, dash: [5, 4] });
        values.push(perSecond(t.produced_bytes), perSecond(t.fetched_bytes));
      });
      chart(section("Bytes per second, by topic (record batches; produced solid, fetched dashed)"), series, values, { unit: "bytes/s", values: (u, v) => v.map(bytes), format: bytes });
      chart(section("Records per second, by topic (produced solid, fetched dashed)"), series,
        D.topics.flatMap((t) => [perSecond(t.produced_records), perSecond(t.fetched_records)]), { unit: "records/s" });
    } else section("Bytes and records").append(el("div", { class: "empty" }, "No record batch produced or fetched."));
    if (D.connections.length) {
      const series = [], values = [];
      D.connections.forEach((c, i) => {
        const color = PALETTE[i % PALETTE.length], name = c.name === null ? "others" : c.name;
        series.push({ label: name + " opened", color, points: true }, { label: name + " closed", color, points: true, hollow: true });
        values.push(positive(c.opened), c.closed.map((v) => (v > 0 ? -v : null)));
      });
      chart(section("Connections opened (up, filled) and closed (down, hollow), by client id", "Opened at their first packet, closed at the FIN or RST of either side; per bucket of " + seconds(AXIS.width) + "."),
        series, values, { unit: "connections", format: (v) => String(Math.abs(v)) });
    }
  }

  guarded("request charts", apiCharts);
  guarded("consumer groups' lanes", groupCharts);
  guarded("lag, topic and connection charts", flowCharts);

  // ---- the ladder -------------------------------------------------------------------------------------------

  function ladder(box, episode) {
    const NS = "http://www.w3.org/2000/svg";
    const svg = (tag, attrs, text) => {
      const node = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
      if (text !== undefined) node.textContent = text;
      return node;
    };
    const hosts = [], names = new Map();
    const host = (address, label) => { if (!names.has(address)) { names.set(address, hosts.length); hosts.push([address, label]); } };
    for (const s of episode.steps) host(s[1], s[2]);
    const clients = hosts.length;
    for (const s of episode.steps) host(s[3], "broker");
    const arrows = [];
    for (const [id, client, , broker, api, corr, ts, end, asked, answered, status] of episode.steps) {
      const tag = api + (corr === null ? "" : " #" + corr);
      if (status !== "orphan-response") arrows.push({ t: ts, from: client, to: broker, text: tag + " " + asked, color: "#1565c0", id });
      if (end !== null || status === "orphan-response")
        arrows.push({ t: end === null ? ts : end, from: broker, to: client, text: tag + " → " + answered,
          color: status === "ok" ? "#2e7d32" : "#c62828", id });
      else if (status !== "orphan-response")
        arrows.push({ t: ts, from: broker, to: client, text: tag + ": " + status, color: "#c62828", id, missing: true });
    }
    arrows.sort((a, b) => a.t - b.t);
    const t0 = arrows.length ? arrows[0].t : 0;
    const COL = 230, LEFT = 110, TOP = 52, ROW = 26;
    const w = LEFT + hosts.length * COL, h = TOP + arrows.length * ROW + 16;
    const root = svg("svg", { class: "ladder", width: w, height: h, viewBox: "0 0 " + w + " " + h });
    const defs = svg("defs");
    for (const color of ["#1565c0", "#2e7d32", "#c62828"]) {
      const marker = svg("marker", { id: "arrow" + color.slice(1), viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
      marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: color }));
      defs.append(marker);
    }
    root.append(defs);
    const xOf = (address) => LEFT + names.get(address) * COL + COL / 2;
    hosts.forEach(([address, label], i) => {
      const x = xOf(address);
      root.append(svg("line", { x1: x, y1: TOP - 8, x2: x, y2: h, stroke: i < clients ? "#90a4ae" : "#37474f", "stroke-dasharray": i < clients ? "3 3" : "" }));
      root.append(svg("text", { x, y: 16, "text-anchor": "middle", class: "host" }, shortened(label || "(no client id)", 30)));
      root.append(svg("text", { x, y: 32, "text-anchor": "middle" }, address));
    });
    arrows.forEach((a, i) => {
      const y = TOP + i * ROW + 14, x1 = xOf(a.from), x2 = xOf(a.to);
      const g = svg("g");
      g.append(svg("title", null, a.text + "\n" + utc(a.t) + "\nexchange " + a.id + ": " + D.show + " " + a.id));
      g.append(svg("text", { x: 4, y: y + 4, fill: "#5b6473" }, "+" + seconds(a.t - t0)));
      g.append(svg("line", { x1, y1: y, x2, y2: y, stroke: a.color, "stroke-width": 1.4, "stroke-dasharray": a.missing ? "4 3" : "", "marker-end": "url(#arrow" + a.color.slice(1) + ")" }));
      const room = Math.max(24, Math.floor((Math.abs(x2 - x1) - 10) / 7));
      g.append(svg("text", { x: (x1 + x2) / 2, y: y - 4, "text-anchor": "middle", fill: a.color }, shortened(a.text, room)));
      root.append(g);
    });
    box.replaceChildren(root);
  }

  function ladderSection() {
    main.append(el("h2", null, "Ladder: an episode, message by message"));
    if (!D.episodes.length) {
      main.append(el("p", { class: "dim" }, D.filter ? "The filter selects no exchange." : "No rebalance in this capture: give an episode with --ladder EXPR (a display filter)."));
      return;
    }
    const note = el("div", { class: "dim" });
    const box = el("div", { class: "ladder-box", id: "ladder" });
    const pick = el("select", { id: "episode" }, D.episodes.map((e, i) => el("option", { value: i }, e.title)));
    const show = () => {
      const e = D.episodes[Number(pick.value)];
      note.textContent = plural(e.steps.length, "exchange") + " drawn, in the order their messages were captured" +
        (e.left_out ? "; " + int(e.left_out) + " more left out (the ladder draws at most " + e.steps.length + ")" : "") +
        (D.episode_exchanges_unkept ? "; " + int(D.episode_exchanges_unkept) + " group exchanges past the first ones were not kept for the episodes" : "") +
        ". Hover an arrow for its time and exchange.";
      ladder(box, e);
    };
    pick.addEventListener("change", show);
    main.append(el("div", null, "Episode: ", pick), note, box);
    show();
  }
  guarded("ladder", ladderSection);

  // ---- the inventory ----------------------------------------------------------------------------------------

  function table(id, columns, rows) {
    const body = el("tbody");
    const fill = (list) => body.replaceChildren(...list.map((r) => el("tr", null, columns.map((c) => {
      const v = c.get(r);
      return el("td", { class: c.num ? "num" : null }, c.fmt ? c.fmt(v) : c.num ? int(v) : v === null || v === undefined ? "" : v);
    }))));
    let order = null;
    const head = el("tr", null, columns.map((c, i) => el("th", { onclick: () => {
      order = order && order[0] === i ? [i, -order[1]] : [i, c.num ? -1 : 1];
      const sign = order[1];
      fill(rows.slice().sort((a, b) => {
        const x = c.get(a), y = c.get(b);
        return sign * (c.num ? (x ?? -Infinity) - (y ?? -Infinity) : String(x ?? "").localeCompare(String(y ?? "")));
      }));
    } }, c.name)));
    fill(rows);
    return el("table", { class: "kd", id }, el("thead", null, head), body);
  }
  const counts = (o) => Object.entries(o || {}).map(([k, n]) => k + " ×" + n).join(", ");

  function inventory() {
    main.append(el("h2", null, "Inventory"));
    const S = D.stats;
    main.append(el("h3", null, "Clients"), table("table-clients", [
      { name: "client id", get: (r) => r.client_id || "(none)" },
      { name: "software", get: (r) => r.software || "" },
      { name: "exchanges", num: true, get: (r) => r.exchanges },
      { name: "connections", num: true, get: (r) => r.connections },
      { name: "errors", num: true, get: (r) => r.errors },
      { name: "API versions used", get: (r) => counts(r.versions) },
      { name: "removed in Kafka 4.0", get: (r) => el("span", { class: "removed" }, counts(r.removed)) },
    ], D.clients));
    main.append(el("h3", null, "APIs"), table("table-apis", [
      { name: "API", get: (r) => r.api_name || "?" },
      { name: "version", num: true, get: (r) => r.api_version },
      { name: "count", num: true, get: (r) => r.count },
      { name: "errors", get: (r) => counts(r.errors) },
      { name: "not ok", get: (r) => counts(Object.fromEntries(Object.entries(r.statuses).filter(([s]) => s !== "ok"))) },
      { name: "p50 ms", num: true, get: (r) => r.p50_ms, fmt: num },
      { name: "p95 ms", num: true, get: (r) => r.p95_ms, fmt: num },
      { name: "p99 ms", num: true, get: (r) => r.p99_ms, fmt: num },
      { name: "max ms", num: true, get: (r) => r.max_ms, fmt: num },
    ], S.apis));
    main.append(el("h3", null, "Topics and partitions"), S.topics.length ? table("table-topics", [
      { name: "topic", get: (r) => (r.topic === null ? "?" : r.topic) },
      { name: "partition", num: true, get: (r) => r.partition },
      { name: "produced records", num: true, get: (r) => r.produced_records },
      { name: "produced bytes", num: true, get: (r) => r.produced_bytes },
      { name: "fetched records", num: true, get: (r) => r.fetched_records },
      { name: "fetched bytes", num: true, get: (r) => r.fetched_bytes },
    ], S.topics) : el("p", { class: "dim" }, "No records field."));
    main.append(el("h3", null, "Consumer groups"), S.groups.length ? table("table-groups", [
      { name: "group", get: (r) => r.group },
      { name: "members", num: true, get: (r) => r.members },
      { name: "generations", get: (r) => r.generations.join(", ") },
      { name: "rebalances", num: true, get: (r) => r.rebalances },
      { name: "offset commits", num: true, get: (r) => r.offset_commits },
    ], S.groups) : el("p", { class: "dim" }, "No consumer group."));
    if (S.rebalances.length)
      main.append(el("h3", null, "Rebalances"), table("table-rebalances", [
        { name: "group", get: (r) => r.group },
        { name: "generation", num: true, get: (r) => r.generation },
        { name: "started (UTC)", get: (r) => r.start },
        { name: "duration ms", num: true, get: (r) => r.duration_ms, fmt: num },
        { name: "completed", get: (r) => (r.completed ? "yes" : "no") },
        { name: "members", num: true, get: (r) => r.members },
        { name: "protocol", get: (r) => r.protocol || "" },
        { name: "reasons", get: (r) => counts(r.reasons) },
      ], S.rebalances));
    main.append(el("h3", null, "Connections"), table("table-flows", [
      { name: "#", num: true, get: (r) => r.connection },
      { name: "client → broker", get: (r) => r.client + " → " + r.broker },
      { name: "client id", get: (r) => r.client_id },
      { name: "exchanges", num: true, get: (r) => r.exchanges },
      { name: "bytes →", num: true, get: (r) => r.bytes_out },
      { name: "bytes ←", num: true, get: (r) => r.bytes_in },
      { name: "first (UTC)", get: (r) => utc(r.first) },
      { name: "lasted", get: (r) => seconds(r.last - r.first) },
      { name: "ended", get: (r) => r.ended + (r.closed_by ? " by the " + r.closed_by : "") },
      { name: "TLS", get: (r) => r.tls || "" },
    ], D.flows));
    if (D.flows_left_out) main.append(el("p", { class: "dim" }, plural(D.flows_left_out, "connection") + " with fewer exchanges not listed."));
    if (S.tls)
      main.append(el("h3", null, "TLS connections"), table("table-tls", [
        { name: "#", num: true, get: (r) => r.connection },
        { name: "client → broker", get: (r) => r.client + " → " + r.broker },
        { name: "version", get: (r) => r.version || "?" },
        { name: "cipher suite", get: (r) => r.cipher_suite || "?" },
        { name: "SNI", get: (r) => r.sni || "" },
        { name: "exchanges", num: true, get: (r) => r.exchanges },
        { name: "hidden", num: true, get: (r) => r.exchanges_hidden },
      ], S.tls));
  }
  guarded("inventory", inventory);

  main.append(el("footer", null, "Made by kdissect " + D.kdissect + ". Charts drawn with uPlot 1.6.32 (MIT licence, © 2022 Leon Sorokin), " +
    "inlined with everything else: this file fetches nothing."));

  let resizing = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => { for (const u of KD.charts) u.setSize({ width: chartWidth(), height: u.height }); }, 150);
  });
  KD.choose = choose;
  KD.ready = true;
  document.body.setAttribute("data-ready", "1");
})();

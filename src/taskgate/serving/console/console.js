// The taskgate operators' console: reads the operators' JSON endpoints once a second and acts
// through them. Every name, notice and id is set as text (textContent, text nodes, attribute
// values), never as markup: a conversation named "<img onerror=...>" shows those characters.
"use strict";
(() => {
  const body = document.body;
  const NOUN = body.dataset.noun; // "conversation" or "session"
  const SETTLES = body.dataset.settles === "true";
  const BASE = `/taskgate/${NOUN}s`;
  // the sign-in's console key, kept by the sign-in page in this origin's storage: the gate takes
  // the cookie only with it in this header (another port of this host has the cookie, not this).
  // Read at each request: a sign-in in another tab replaces the cookie and the key together.
  const stored = () => localStorage.getItem("taskgate-console-key") || "";
  const SVG = "http://www.w3.org/2000/svg";
  const WORDS = { TODO: "ready", BLOCKED: "blocked", DONE: "done", CANCELLED: "cancelled" };
  const POLL_MS = 1000;
  const drawn = { list: "", detail: "", metrics: "" };
  let selected = null;

  // -- building elements, text only --------------------------------------------------------------
  function el(tag, props, ...kids) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key === "onclick") node.addEventListener("click", value);
      else node.setAttribute(key, value);
    }
    for (const kid of kids) if (kid !== null && kid !== undefined) node.append(kid);
    return node;
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function clip(text, n) {
    const flat = String(text).split(/\s+/).join(" ");
    return flat.length <= n ? flat : `${flat.slice(0, n - 1)}…`;
  }

  // -- talking to the gate -----------------------------------------------------------------------
  async function call(method, path, data) {
    const sent = stored();
    const init = {
      method,
      headers: { "x-taskgate-console": sent },
      credentials: "same-origin",
      cache: "no-store",
    };
    if (data !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(data);
    }
    const answer = await fetch(path, init);
    const text = await answer.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch (_) {
      json = null;
    }
    if (answer.status === 401 && method === "GET") {
      // signed in again in another tab meanwhile: go on with that sign-in; else it expired
      if (stored() && stored() !== sent) throw new Error("signed in again elsewhere: retrying");
      signOut(); // the sign-in expired or its key is gone: back to the sign-in form
      throw new Error("signed out");
    }
    if (!answer.ok) {
      const said = json && json.error && json.error.message;
      throw new Error(said || `${answer.status}: ${clip(text, 200)}`);
    }
    return json;
  }

  function signOut() {
    localStorage.removeItem("taskgate-console-key");
    document.querySelector('form[action="/taskgate/console/signout"]').submit();
  }

  const one = (id) => `${BASE}/${encodeURIComponent(id)}`;

  function flash(text, bad) {
    const node = document.getElementById("flash");
    node.textContent = text;
    node.className = bad ? "bad" : "good";
  }

  // -- the metrics strip -------------------------------------------------------------------------
  function drawMetrics(m) {
    const strip = document.getElementById("metrics");
    const items = [];
    const item = (label, value, title) =>
      items.push(el("li", title ? { title } : {}, el("b", { text: String(value) }), ` ${label}`));
    const verdicts = m.verdicts || {};
    const admitted = verdicts.admitted || 0;
    const refused = Object.entries(verdicts).filter(([k]) => k !== "admitted");
    const refusedTotal = refused.reduce((sum, [, n]) => sum + n, 0);
    item("calls judged", admitted + refusedTotal);
    item("admitted", admitted);
    item("refused", refusedTotal, refused.map(([k, n]) => `${k}: ${n}`).join(", "));
    for (const [reason, n] of refused) item(reason, n);
    if (m.calls && m.calls["in-doubt"]) item("in doubt", m.calls["in-doubt"]);
    const asks = m.asks || {};
    if (asks.asked) item("asked", asks.asked, Object.entries(asks).filter(([k]) => k !== "asked").map(([k, n]) => `${k}: ${n}`).join(", "));
    // what could not be gated, and refused for it (a compile, a helper, the journal failing)
    const failed = Object.entries({ ...(m.refused || {}), ...(m.errors || {}) });
    const failedTotal = failed.reduce((sum, [, n]) => sum + n, 0);
    if (failedTotal) item("refused ungated", failedTotal, failed.map(([k, n]) => `${k}: ${n}`).join(", "));
    if ("requests" in m) item("requests", m.requests);
    // percentiles only over enough calls (the gate leaves them out below 10 and 100)
    if ("p50_ms" in m) item("ms gate p50", m.p50_ms, `over ${m.samples} calls`);
    if ("p99_ms" in m) item("ms gate p99", m.p99_ms, `over ${m.samples} calls`);
    strip.replaceChildren(...items);
  }

  // -- the list ----------------------------------------------------------------------------------
  function drawList(rows) {
    const list = document.getElementById("list");
    if (!rows.length) {
      list.replaceChildren(el("li", { class: "empty", text: `No ${NOUN}s yet.` }));
      return;
    }
    list.replaceChildren(
      ...rows.map((row) => {
        const badges = [];
        if (row.turns !== undefined) badges.push(el("span", { class: "badge", text: turns(row.turns) }));
        if (row.held) badges.push(el("span", { class: "badge held", text: `${row.held} waiting` }));
        if (row.asks) badges.push(el("span", { class: "badge held", text: `${row.asks} asked` }));
        if (row.in_flight) badges.push(el("span", { class: "badge doubt", text: `${row.in_flight} in flight` }));
        const pick = el("button", {
          class: row.id === selected ? "row chosen" : "row",
          onclick: () => choose(row.id),
        }, el("span", { class: "first", text: row.first ? `"${clip(row.first, 80)}"` : "(no user message yet)" }),
          el("span", { class: "meta", text: [row.label, when(row.last || row.since)].filter(Boolean).join(" · ") }),
          el("span", { class: "id", text: row.id }), ...badges);
        return el("li", {}, pick);
      }),
    );
  }

  function choose(id) {
    selected = id;
    document.getElementById("step-menu").hidden = true;
    drawn.detail = "";
    drawn.list = "";
    location.hash = encodeURIComponent(id);
    refresh();
  }

  // -- one conversation --------------------------------------------------------------------------
  const own = (object, key) => object !== null && object !== undefined && Object.hasOwn(object, key);

  function name(status, step) {
    const spec = status.plan && own(status.plan.steps, step) ? status.plan.steps[step] : null;
    if (!spec) return step;
    return spec.text || (spec.tool || spec.code || step).split("_").join(" ");
  }

  // steps by id in Maps: an id may be any string ("constructor", "__proto__", ...)
  function layers(steps) {
    const depth = new Map();
    const visit = (id, seen) => {
      if (depth.has(id)) return depth.get(id);
      if (seen.has(id) || !steps.has(id)) return 0;
      seen.add(id);
      const deps = steps.get(id).deps || [];
      depth.set(id, deps.length ? 1 + Math.max(...deps.map((d) => visit(d, seen))) : 0);
      return depth.get(id);
    };
    for (const id of steps.keys()) visit(id, new Set());
    return depth;
  }

  function drawGraph(status) {
    const steps = new Map(Object.entries(status.plan.steps));
    const depth = layers(steps);
    const columns = [];
    for (const id of steps.keys()) (columns[depth.get(id)] = columns[depth.get(id)] || []).push(id);
    const W = 190, H = 52, GX = 60, GY = 18;
    const at = new Map();
    columns.forEach((ids, c) => ids.forEach((id, r) => at.set(id, { x: 10 + c * (W + GX), y: 10 + r * (H + GY) })));
    const tall = Math.max(...columns.map((ids) => ids.length));
    const width = 20 + columns.length * (W + GX) - GX;
    const height = 20 + tall * (H + GY) - GY;
    const root = svg("svg", { id: "graph", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
    root.append(svg("title", {}, `the plan of ${status.id}`));
    const arrow = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" });
    arrow.append(svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }));
    const defs = svg("defs");
    defs.append(arrow);
    root.append(defs);
    for (const [id, spec] of steps) {
      for (const dep of spec.deps || []) {
        if (!at.has(dep)) continue;
        const a = at.get(dep), b = at.get(id);
        root.append(svg("path", {
          class: "edge",
          d: `M${a.x + W},${a.y + H / 2} C${a.x + W + GX / 2},${a.y + H / 2} ${b.x - GX / 2},${b.y + H / 2} ${b.x},${b.y + H / 2}`,
          "marker-end": "url(#arrow)",
        }));
      }
    }
    for (const id of steps.keys()) {
      const state = (own(status.statuses, id) && status.statuses[id]) || "TODO";
      const box = at.get(id);
      const g = svg("g", { class: `node ${state.toLowerCase()}`, tabindex: 0, "data-step": id });
      g.append(svg("title", {}, `${id}: ${name(status, id)} (${WORDS[state] || state})`));
      g.append(svg("rect", { x: box.x, y: box.y, width: W, height: H, rx: 6 }));
      g.append(svg("text", { x: box.x + 8, y: box.y + 20, class: "label" }, clip(name(status, id), 26)));
      g.append(svg("text", { x: box.x + 8, y: box.y + 40, class: "state" }, `${clip(id, 12)} · ${WORDS[state] || state}`));
      g.addEventListener("click", () => stepActions(status, id));
      g.addEventListener("keydown", (e) => e.key === "Enter" && stepActions(status, id));
      root.append(g);
    }
    return root;
  }

  // what the gate read a user's message as, in words
  const READ_AS = {
    confirm: "a yes to the agent's proposal", request: "a request", decline: "a no",
    change: "a change of details", question: "a question", closing: "thanks or goodbye",
    alternatives: "a wish for other options", need: "a need, not yet a request",
    unclear: "unclear between steps", other: "nothing the gate could place",
    held: "a yes with a condition",
  };

  function describe(status, row) {
    const who = (step) => (step ? `'${clip(name(status, step), 60)}'` : "no step");
    switch (row.kind) {
      case "plan":
        return ["plan", `the plan was set: ${Object.keys(row.plan.steps).length} steps`];
      case "request": {
        const heard = own(status.said || {}, String(row.seq)) ? status.said[String(row.seq)] : null;
        const words = heard ? ` — "${clip(heard.user, 200)}"${READ_AS[heard.read_as] ? ` (read as ${READ_AS[heard.read_as]})` : ""}` : "";
        if (row.work_order === null) return ["request", `a turn that asks for nothing closed the request${words}`];
        if (!row.step) return ["request", `the user asked for none of the steps${words}`];
        return ["request", `the user asked for ${who(row.step)}${row.explicit_redo ? ", again (a redo)" : ""}${words}`];
      }
      case "attempt": {
        const what = row.tool || row.code || "a call";
        if (row.decision === "admit") return ["admit", `${what} ran for ${who(row.step)}`];
        const notice = own(status.notices, String(row.seq)) ? status.notices[String(row.seq)] : null;
        return ["refuse", notice || `${what} was refused (${row.reason})`];
      }
      case "revision": {
        const r = row.revision, parts = [];
        if (r.cancel) parts.push(`cancelled ${who(r.cancel)}`);
        for (const [step, deps] of Object.entries(r.rewires || {}))
          parts.push(`${who(step)} now waits for ${deps.length ? deps.map(who).join(", ") : "nothing"}`);
        if (r.relax) parts.push(`${who(r.relax[0])} no longer waits for ${who(r.relax[1])}`);
        return ["revision", `revision: ${parts.join("; ")}`];
      }
      case "approval":
        return ["approval", `${row.by} approved one call of ${who(row.step)}${row.reason ? `: ${row.reason}` : ""}`];
      case "ask":
        return ["ask", `held ${row.tool} and asked: "${clip(row.question, 300)}" (${row.why})`];
      case "answer": {
        const said = { approve: "said yes", edit: "edited the call", reject: "said no", dropped: "did not answer; the conversation moved on" }[row.decision] || row.decision;
        return ["answer", `${row.by} ${said}${row.channel ? ` (${row.channel})` : ""}`];
      }
      default:
        return ["other", row.kind];
    }
  }

  function heldLine(status, h) {
    if (h.approval) return `waiting: ${h.approval.by} approves one call of '${clip(name(status, h.approval.step), 60)}'`;
    if (h.revision) {
      const r = h.revision;
      if (r.cancel) return `waiting: cancel '${clip(name(status, r.cancel), 60)}'`;
      return `waiting: a revision of ${Object.keys(r.rewires || {}).length || 1} step(s)`;
    }
    return "waiting: a change";
  }

  function turns(n) {
    return n === 1 ? "1 turn" : `${n} turns`;
  }

  // a time in seconds since the epoch, as this browser writes the day and the time (0: unknown)
  function when(seconds) {
    if (!seconds) return "";
    const at = new Date(seconds * 1000);
    const today = at.toDateString() === new Date().toDateString();
    return today ? at.toLocaleTimeString() : at.toLocaleString();
  }

  function drawDetail(status) {
    const detail = document.getElementById("detail");
    const parts = [el("h2", { text: status.id })];
    const facts = [turns(status.turns)];
    if (status.label) facts.unshift(status.label);
    if (status.rung) facts.push(`rung: ${status.rung}`);
    if (status.request) facts.push(`current request: ${status.request.step ? name(status, status.request.step) : "none of the steps"}`);
    parts.push(el("p", { class: "facts", text: facts.join(" · ") }));
    if (!status.plan) {
      parts.push(el("p", { class: "empty", text: "No plan yet: the gate has not started this one." }));
      detail.replaceChildren(...parts);
      return;
    }
    parts.push(el("section", { class: "graph" }, el("h3", { text: "Plan" }), drawGraph(status),
      el("p", { class: "hint", text: "Choose a step to approve, cancel or rewire it." })));
    const waiting = [];
    for (const h of status.held || []) waiting.push(el("li", { class: "held", text: heldLine(status, h) }));
    for (const a of status.asks || []) {
      const since = a.time ? ` since ${new Date(a.time * 1000).toLocaleTimeString()}` : "";
      waiting.push(el("li", { class: "ask", text: `waiting on the user${since}: "${clip(a.question, 300)}"` }));
    }
    for (const step of status.in_doubt || []) {
      const line = el("li", { class: "doubt" }, `in doubt: a call of '${clip(name(status, step), 60)}' began and never ended`);
      if (SETTLES) {
        line.append(" ",
          el("button", { class: "settle-ran", onclick: () => settle(status, step, true) , text: "It ran" }), " ",
          el("button", { class: "settle-not", onclick: () => settle(status, step, false), text: "It did not run" }));
      }
      waiting.push(line);
    }
    for (const step of status.running || []) waiting.push(el("li", { text: `running: a call of '${clip(name(status, step), 60)}'` }));
    for (const p of status.pending || []) {
      if (p.decision === "admit") waiting.push(el("li", { text: `handed out, no result yet: ${p.tool || p.code || "a call"}` }));
    }
    parts.push(el("section", { class: "pending" }, el("h3", { text: "Waiting" }),
      waiting.length ? el("ul", { id: "waiting" }, ...waiting) : el("p", { class: "empty", text: "Nothing waits." })));
    const entry = (seq, kind, text) =>
      el("li", { class: `entry ${kind}` }, el("span", { class: "seq", text: seq }), el("span", { class: "kind", text: kind }), el("span", { class: "text", text }));
    const rows = (status.pending || []).filter((p) => p.decision === "refuse").reverse()
      .map((p) => entry("now", "refuse", p.notice || `${p.tool || p.code || "a call"} was refused (${p.reason})`));
    for (const row of (status.ledger || []).slice().reverse()) {
      const [kind, text] = describe(status, row);
      rows.push(entry(`#${row.seq}`, kind, text));
    }
    parts.push(el("section", { class: "timeline" }, el("h3", { text: "Ledger, newest first" }), el("ol", { id: "timeline" }, ...rows)));
    detail.replaceChildren(...parts);
  }

  // -- acting: a dialog, confirmed, then posted --------------------------------------------------
  function ask(title, fields, note, post) {
    const dialog = document.getElementById("act");
    document.getElementById("act-title").textContent = title;
    document.getElementById("act-fields").replaceChildren(...fields);
    document.getElementById("act-said").textContent = note;
    dialog.onclose = async () => {
      if (dialog.returnValue !== "ok") return;
      try {
        await post();
      } catch (exc) {
        flash(`Not done: ${exc.message}`, true);
      }
      drawn.detail = "";
      refresh();
    };
    dialog.returnValue = "";
    dialog.showModal();
  }

  function field(label, input) {
    return el("label", {}, label, input);
  }

  function stepActions(status, step) {
    const state = own(status.statuses, step) ? status.statuses[step] : "TODO";
    const title = `'${clip(name(status, step), 60)}' (${step}, ${WORDS[state] || state})`;
    const buttons = [
      el("button", { id: "do-approve", onclick: () => approve(status, step), text: "Approve one call" }),
    ];
    if (state !== "CANCELLED" && state !== "DONE") {
      buttons.push(el("button", { id: "do-cancel", onclick: () => cancel(status, step), text: "Cancel" }));
    }
    if (state !== "CANCELLED") {
      buttons.push(el("button", { id: "do-rewire", onclick: () => rewire(status, step), text: "Rewire" }));
    }
    const menu = document.getElementById("step-menu");
    menu.replaceChildren(el("h3", { text: title }), ...buttons);
    menu.hidden = false;
  }

  function approve(status, step) {
    const by = el("input", { id: "approve-by", required: "", maxlength: 200, value: localStorage.getItem("taskgate-by") || "" });
    const why = el("input", { id: "approve-reason", maxlength: 2000 });
    ask(`Approve one call of '${clip(name(status, step), 60)}'`, [field("Who approves", by), field("Why", why)],
      "It is given at the next exchange, for that request only, whatever the step's state.",
      async () => {
        localStorage.setItem("taskgate-by", by.value);
        await call("POST", `${one(status.id)}/approvals`, { step, by: by.value, reason: why.value });
        flash(`Approval of '${clip(name(status, step), 60)}' held for the next exchange.`);
      });
  }

  function cancel(status, step) {
    const inherit = el("input", { type: "checkbox", id: "cancel-inherit", checked: "" });
    ask(`Cancel '${clip(name(status, step), 60)}'`, [field("Steps waiting for it wait for its prerequisites instead ", inherit)],
      "Its calls are refused from the next exchange on.",
      async () => {
        await call("POST", `${one(status.id)}/revisions`, { cancel: step, inherit: inherit.checked });
        flash(`Cancelling '${clip(name(status, step), 60)}' is held for the next exchange.`);
      });
  }

  function rewire(status, step) {
    const current = new Set((own(status.plan.steps, step) && status.plan.steps[step].deps) || []);
    const boxes = Object.keys(status.plan.steps).filter((s) => s !== step && !(own(status.statuses, s) && status.statuses[s] === "CANCELLED")).map((s) => {
      const box = el("input", { type: "checkbox", class: "rewire-dep", "data-step": s });
      box.checked = current.has(s);
      return [s, box];
    });
    ask(`What '${clip(name(status, step), 60)}' waits for`, boxes.map(([s, box]) => field(`${clip(name(status, s), 60)} (${s}) `, box)),
      "A rewire that would leave a step stranded or make a cycle is refused.",
      async () => {
        const deps = boxes.filter(([, box]) => box.checked).map(([s]) => s);
        await call("POST", `${one(status.id)}/revisions`, { rewire: { [step]: deps } });
        flash(`The rewire of '${clip(name(status, step), 60)}' is held for the next exchange.`);
      });
  }

  function settle(status, step, ran) {
    ask(ran ? "The call ran" : "The call did not run", [],
      ran ? `'${clip(name(status, step), 60)}' is recorded done.` : `'${clip(name(status, step), 60)}' may be called again.`,
      async () => {
        await call("POST", `${one(status.id)}/settle`, { step, ran });
        flash(`Settled: '${clip(name(status, step), 60)}' ${ran ? "ran" : "did not run"}.`);
      });
  }

  // -- the loop ----------------------------------------------------------------------------------
  let busy = false;
  async function refresh() {
    if (busy) return;
    busy = true;
    try {
      const [list, metrics] = await Promise.all([call("GET", BASE), call("GET", "/taskgate/metrics")]);
      const rows = list[`${NOUN}s`] || [];
      if (selected === null) selected = fromHash();
      const listKey = JSON.stringify([rows, selected]);
      if (listKey !== drawn.list) (drawn.list = listKey), drawList(rows);
      const metricsKey = JSON.stringify(metrics);
      if (metricsKey !== drawn.metrics) (drawn.metrics = metricsKey), drawMetrics(metrics);
      if (selected !== null) {
        const status = await call("GET", one(selected));
        const key = JSON.stringify(status);
        if (key !== drawn.detail && !document.getElementById("act").open) {
          drawDetail(status);
          drawn.detail = key; // only once drawn: a failed draw is tried again, and said
        }
      }
      document.getElementById("live").textContent = `live · ${new Date().toLocaleTimeString()}`;
    } catch (exc) {
      document.getElementById("live").textContent = `not updated: ${exc.message}`;
    } finally {
      busy = false;
    }
  }

  function fromHash() {
    if (location.hash.length < 2) return null;
    try {
      return decodeURIComponent(location.hash.slice(1));
    } catch (_) {
      return null; // a hand-made address: choose from the list
    }
  }

  window.addEventListener("hashchange", () => {
    const id = fromHash();
    if (id !== selected) {
      selected = id;
      document.getElementById("step-menu").hidden = true;
      drawn.detail = drawn.list = "";
      if (id === null) document.getElementById("detail").replaceChildren(el("p", { class: "empty", text: `Choose a ${NOUN} on the left.` }));
      refresh();
    }
  });

  document.getElementById("signout").addEventListener("click", () => {
    localStorage.removeItem("taskgate-console-key");
  });
  if (!stored()) {
    signOut(); // signed in in another browser (or the key was cleared): sign in here
    return;
  }
  refresh();
  setInterval(refresh, POLL_MS);
})();

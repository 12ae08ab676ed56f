// The per-episode drill-down of a taskgate report. Everything is built with textContent:
// transcript text is data, never markup.
(function () {
  "use strict";
  const episodes = JSON.parse(document.getElementById("episodes-data").textContent);
  const list = document.getElementById("episode-list");
  const armSelect = document.getElementById("filter-arm");
  const failedOnly = document.getElementById("filter-failed");
  const search = document.getElementById("filter-text");
  const shown = document.getElementById("shown");

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  function errorsText(t) {
    const primary = t.errors.join(", ");
    const da = t.daErrors.join(", ");
    return da === primary ? primary : primary + " [" + (da || "none") + "]";
  }

  function turnTable(ep) {
    const table = el("table", null, "turns");
    const head = el("tr");
    ["#", "label", "step", "work order", "user", "directive / matched", "reply", "bookings",
     "notices", "errors"].forEach(function (h) { head.appendChild(el("th", h)); });
    table.appendChild(head);
    ep.turns.forEach(function (t) {
      const row = el("tr", null, t.errors.length ? "error" : "");
      row.dataset.turn = t.i;
      row.appendChild(el("td", t.i));
      row.appendChild(el("td", t.label + (t.redo ? " (explicit redo)" : "")));
      row.appendChild(el("td", t.step || ""));
      row.appendChild(el("td", t.wo || ""));
      row.appendChild(el("td", t.user, "user"));
      const dm = [];
      if (t.directive) dm.push(t.directive);
      if (t.matched !== null) dm.push("matched: " + t.matched);
      if (t.askBack) dm.push("asked back: " + t.askBack);
      if (t.corruptions.length) dm.push("corrupted: " + t.corruptions.join("; "));
      row.appendChild(el("td", dm.join("\n"), "reply"));
      row.appendChild(el("td", t.replies.join("\n---\n"), "reply"));
      const books = el("td");
      t.bookings.forEach(function (b) {
        const line = b.ref + " " + b.wo + ": " + b.decision + (b.reason ? " (" + b.reason + ")" : "") +
          (b.redisplay ? " re-display" : "");
        books.appendChild(el("div", line, b.decision));
      });
      if (t.executions) t.executions.forEach(function (x) { books.appendChild(el("div", "executed " + x)); });
      row.appendChild(books);
      row.appendChild(el("td", t.notices.join("\n"), "reply"));
      row.appendChild(el("td", errorsText(t), "fail"));
      table.appendChild(row);
    });
    return table;
  }

  function item(ep) {
    const details = el("details", null, "episode");
    details.dataset.arm = ep.arm;
    details.dataset.strict = ep.strict ? "1" : "0";
    const channels = Object.keys(ep.channels).map(function (c) { return c + " " + ep.channels[c]; });
    const first = ep.turns.find(function (t) { return t.errors.length > 0; });
    const summary = el("summary");
    summary.appendChild(el("span", ep.strict ? "pass" : "fail", ep.strict ? "pass" : "fail"));
    summary.appendChild(document.createTextNode(
      " " + ep.id + " | " + ep.config + " | " + ep.cell + " | seed " + ep.seed +
      (ep.da === ep.strict ? "" : " | decline-aware " + (ep.da ? "pass" : "fail")) +
      (channels.length ? " | " + channels.join(", ") : "") +
      (first ? " | first error: turn " + first.i + " (" + first.errors.join(", ") + ")" : "")));
    details.appendChild(summary);
    details.addEventListener("toggle", function () {
      if (!details.open || details.children.length !== 1) return;
      details.appendChild(turnTable(ep));
      // open on the first error, not on the filler turns before it
      const row = details.querySelector("tr.error");
      if (row) {
        row.classList.add("first-error");
        row.scrollIntoView({ block: "center" });
      }
    });
    return details;
  }

  const items = episodes.map(item);
  const text = episodes.map(function (ep) {
    return (ep.id + " " + ep.turns.map(function (t) { return t.user + " " + t.replies.join(" "); }).join(" ")).toLowerCase();
  });
  Array.from(new Set(episodes.map(function (e) { return e.arm; }))).forEach(function (a) {
    armSelect.appendChild(el("option", a));
  });

  function refresh() {
    const arm = armSelect.value, failed = failedOnly.checked, q = search.value.toLowerCase();
    let n = 0;
    items.forEach(function (node, i) {
      const ep = episodes[i];
      const show = (!arm || ep.arm === arm) && (!failed || !ep.strict) && (!q || text[i].indexOf(q) >= 0);
      node.hidden = !show;
      n += show ? 1 : 0;
    });
    shown.textContent = n + " of " + episodes.length + " episode-arms shown";
  }
  items.forEach(function (node) { list.appendChild(node); });
  [armSelect, failedOnly].forEach(function (c) { c.addEventListener("change", refresh); });
  search.addEventListener("input", refresh);
  refresh();
})();

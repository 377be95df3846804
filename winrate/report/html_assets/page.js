/* winrate web page: table sorting, the JSON download and the pairwise matrix.
   Every string from the data is set with textContent, never parsed as HTML. */
(function () {
  "use strict";
  var source = document.getElementById("winrate-data");
  var text = source.textContent;
  var data = JSON.parse(text);

  /* ---- sortable tables: click a header; again to reverse; ties keep the first order */
  function cellKey(row, col, numeric) {
    var raw = row.cells[col].getAttribute("data-v");
    if (raw === null || raw === "") { return null; }
    return numeric ? parseFloat(raw) : raw;
  }

  function sortTable(table, col, th) {
    var first = th.getAttribute("data-sort");
    var dir = th.getAttribute("aria-sort") === first
      ? (first === "ascending" ? "descending" : "ascending") : first;
    var numeric = th.getAttribute("data-type") === "num";
    var sign = dir === "ascending" ? 1 : -1;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (other) {
      if (other.hasAttribute("aria-sort")) { other.removeAttribute("aria-sort"); }
    });
    th.setAttribute("aria-sort", dir);
    var body = table.tBodies[0];
    var rows = Array.prototype.map.call(body.rows, function (row) {
      return { row: row, key: cellKey(row, col, numeric), at: +row.getAttribute("data-i") };
    });
    rows.sort(function (a, b) {
      if (a.key === null || b.key === null) {
        return a.key === b.key ? a.at - b.at : (a.key === null ? 1 : -1);
      }
      var c = a.key < b.key ? -1 : (a.key > b.key ? 1 : 0);
      return c !== 0 ? sign * c : a.at - b.at;
    });
    var fragment = document.createDocumentFragment();
    rows.forEach(function (item) { fragment.appendChild(item.row); });
    body.appendChild(fragment);
  }

  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      var button = th.querySelector("button");
      if (button) { button.addEventListener("click", function () { sortTable(table, col, th); }); }
    });
  });

  /* ---- per board: the search box filters its rows by name and metadata (data-search,
     lower case); "more columns" shows or hides its columns of class "more" */
  function countText(shown, total) {
    return shown.toLocaleString("en-US") + " of " + total.toLocaleString("en-US") + " models";
  }

  Array.prototype.forEach.call(document.querySelectorAll("section.board"), function (board) {
    var table = board.querySelector("table.lb");
    var search = board.querySelector("input[type=search]");
    var count = board.querySelector(".shown-count");
    var more = board.querySelector(".more-columns");
    if (!table) { return; }
    if (search) {
      search.addEventListener("input", function () {
        var wanted = search.value.trim().toLowerCase();
        var shown = 0, rows = table.tBodies[0].rows;
        Array.prototype.forEach.call(rows, function (row) {
          var hit = !wanted || row.getAttribute("data-search").indexOf(wanted) >= 0;
          row.hidden = !hit;
          if (hit) { shown += 1; }
        });
        if (count) { count.textContent = countText(shown, rows.length); }
      });
    }
    if (more) {
      more.addEventListener("click", function () {
        var all = table.classList.toggle("all");
        more.setAttribute("aria-pressed", all ? "true" : "false");
        more.textContent = all ? "Fewer columns" : "More columns";
      });
    }
  });

  /* ---- category tabs: one panel shown at a time */
  var tabs = document.querySelectorAll("[role=tab]");
  Array.prototype.forEach.call(tabs, function (tab) {
    tab.addEventListener("click", function () {
      Array.prototype.forEach.call(tabs, function (other) {
        var on = other === tab;
        other.setAttribute("aria-selected", on ? "true" : "false");
        document.getElementById(other.getAttribute("aria-controls")).hidden = !on;
      });
    });
  });

  /* ---- the full result as JSON: the embedded text itself, as a Blob */
  var jsonLink = document.getElementById("download-json");
  if (jsonLink) {
    jsonLink.href = URL.createObjectURL(new Blob([text + "\n"], { type: "application/json" }));
  }

  /* ---- pairwise matrix: rows and columns in the table's first order (best first) */
  var canvas = document.getElementById("pair-matrix");
  if (!canvas || !data.pairwise) { return; }
  var table = document.getElementById("leaderboard");
  var order = Array.prototype.map.call(table.tBodies[0].rows, function (row) {
    return { i: +row.getAttribute("data-i"), model: +row.getAttribute("data-m") };
  }).sort(function (a, b) { return a.i - b.i; }).map(function (r) { return r.model; });
  var k = order.length;
  var position = {};
  order.forEach(function (m, at) { position[data.models[m]] = at; });
  var alpha = data.settings.alpha;
  var unit = canvas.getAttribute("data-unit");
  var factor = +canvas.getAttribute("data-factor");
  var decimals = +canvas.getAttribute("data-decimals");
  var pairs = new Array(k * k);
  data.pairwise.forEach(function (rec) {
    var r = position[rec.model_i], c = position[rec.model_j];
    if (r === undefined || c === undefined) { return; }
    pairs[r * k + c] = { rec: rec, flip: false };
    pairs[c * k + r] = { rec: rec, flip: true };
  });
  var colors = { ahead: "#3a72b0", behind: "#dc7560", same: "#e4e7eb", none: "#ffffff" };
  var readout = document.getElementById("pair-readout");
  var summary = document.getElementById("pair-summary");
  var choice = document.querySelectorAll("input[name=adjust]");
  var layout = null;
  var hover = null;

  function adjustment() {
    var picked = document.querySelector("input[name=adjust]:checked");
    return picked ? picked.value : "p_max_t";
  }

  function verdict(cell, key) {
    if (!cell) { return "none"; }
    var p = cell.rec[key], d = cell.rec.estimate;
    if (p === null || d === null) { return "none"; }
    if (p >= alpha) { return "same"; }
    return (d > 0) !== cell.flip ? "ahead" : "behind";
  }

  function draw() {
    var key = adjustment();
    var wrap = canvas.parentNode.clientWidth;
    var margin = k > 40 ? 26 : 22;
    var cell = Math.max(2, Math.min(18, Math.floor((Math.min(wrap, 760) - margin - 2) / k)));
    var size = margin + cell * k + 2;
    var ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(size * ratio);
    canvas.height = Math.round(size * ratio);
    canvas.style.width = size + "px";
    canvas.style.height = size + "px";
    var ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, size, size);
    var real = 0, total = 0;
    for (var r = 0; r < k; r++) {
      for (var c = 0; c < k; c++) {
        var v = r === c ? "none" : verdict(pairs[r * k + c], key);
        if (r < c && v !== "none") { total += 1; if (v !== "same") { real += 1; } }
        ctx.fillStyle = colors[v];
        ctx.fillRect(margin + c * cell, margin + r * cell, cell - (cell > 4 ? 1 : 0),
                     cell - (cell > 4 ? 1 : 0));
      }
    }
    ctx.fillStyle = "#59636e";
    ctx.font = "10px system-ui, sans-serif";
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    var step = cell >= 14 ? 1 : (cell >= 7 ? 5 : 10);
    for (var t = 0; t < k; t++) {
      if ((t + 1) % step !== 0 && t !== 0) { continue; }
      var mid = margin + t * cell + cell / 2;
      ctx.fillText(String(t + 1), mid, margin / 2);
      ctx.fillText(String(t + 1), margin / 2, mid);
    }
    layout = { margin: margin, cell: cell };
    if (hover) {  /* the pointed pair's row and column, outlined */
      ctx.strokeStyle = "#1b1f24";
      ctx.lineWidth = 1;
      ctx.strokeRect(margin - 0.5, margin + hover.r * cell - 0.5, k * cell + 1, cell + 1);
      ctx.strokeRect(margin + hover.c * cell - 0.5, margin - 0.5, cell + 1, k * cell + 1);
    }
    var name = key === "p_holm" ? "Holm" : "max-T";
    summary.textContent = real + " of " + total + " pairs differ at the " +
      Math.round(1000 * (1 - alpha)) / 10 + "% level (" + name + "-adjusted p < " + alpha + ")";
    summary.setAttribute("data-real", String(real));
    summary.setAttribute("data-total", String(total));
  }

  function fmt(x) { return x === null ? "\u2014" : (factor * x).toFixed(decimals); }
  function fmtP(p) {
    if (p === null) { return "\u2014"; }
    return p < 0.0001 ? "<0.0001" : p.toFixed(4);
  }

  function show(event) {
    if (!layout) { return; }
    var box = canvas.getBoundingClientRect();
    var c = Math.floor((event.clientX - box.left - layout.margin) / layout.cell);
    var r = Math.floor((event.clientY - box.top - layout.margin) / layout.cell);
    if (r < 0 || c < 0 || r >= k || c >= k || r === c) { return; }
    hover = { r: r, c: c };
    draw();
    var cell = pairs[r * k + c];
    var a = data.models[order[r]], b = data.models[order[c]];
    if (!cell) { readout.textContent = "#" + (r + 1) + " " + a + " vs #" + (c + 1) + " " + b +
      ": not compared"; return; }
    var key = adjustment(), rec = cell.rec, sign = cell.flip ? -1 : 1;
    var v = verdict(cell, key);
    var words = { ahead: "a real difference: the row model is ahead",
                  behind: "a real difference: the row model is behind",
                  same: "not distinguishable at this level", none: "undefined" };
    readout.textContent = "#" + (r + 1) + " " + a + " \u2212 #" + (c + 1) + " " + b + " = " +
      fmt(rec.estimate === null ? null : sign * rec.estimate) + " " + unit + " (SE " +
      fmt(rec.se) + "); p " + fmtP(rec.p) + ", Holm " + fmtP(rec.p_holm) + ", max-T " +
      fmtP(rec.p_max_t) + ": " + words[v];
  }

  canvas.addEventListener("mousemove", show);
  canvas.addEventListener("click", show);
  Array.prototype.forEach.call(choice, function (input) { input.addEventListener("change", draw); });
  window.addEventListener("resize", draw);
  draw();
}());

// app.js — the page of `tinygpt serve`: a playground (streamed completions,
// each token shaded by its probability, alternatives on hover) and the head
// explorer (every layer x head's attention for a text, heads switched off
// to see the next-token distribution move, two models side by side). Plain
// JavaScript over the server's own API; nothing is loaded from elsewhere.
"use strict";

const $ = (id) => document.getElementById(id);
const status = (s, isError) => {
  $("status").textContent = s;
  $("status").classList.toggle("error", !!isError || s.startsWith("error"));
};

// The API key (a server started with --api-key wants it): kept in this
// tab's sessionStorage only, never in the URL or localStorage.
const KEY = "tinygpt-api-key";
$("api-key").value = sessionStorage.getItem(KEY) || "";
function headers(extra) {
  const h = Object.assign({}, extra);
  const k = $("api-key").value;
  if (k) h.Authorization = "Bearer " + k;
  return h;
}
// A 401 as a message saying what to do.
function authError(r) {
  $("key-label").classList.add("want");
  return new Error($("api-key").value ? "401: the server refused this API key; check the API key field (top right)"
    : "401: this server wants an API key (it runs with --api-key): enter it in the API key field (top right)");
}
$("api-key").onchange = () => {
  const k = $("api-key").value;
  if (k) sessionStorage.setItem(KEY, k); else sessionStorage.removeItem(KEY);
  $("key-label").classList.remove("want");
  loadModels().catch((e) => status("error: " + e.message));
};

async function api(path, body) {
  const r = await fetch(path, body === undefined ? { headers: headers() } : {
    method: "POST", headers: headers({ "Content-Type": "application/json" }), body: JSON.stringify(body) });
  if (r.status === 401) throw authError(r);
  const j = await r.json();
  if (!r.ok) throw new Error(j.error ? j.error.message : r.statusText);
  return j;
}

// A token's text as shown: visible spaces and newlines in token chips.
const show = (s) => s.replace(/\n/g, "\u21b5").replace(/ /g, "\u00b7");
const esc = (s) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

// ---- tabs and models -------------------------------------------------------
for (const b of document.querySelectorAll(".tab")) {
  b.onclick = () => {
    for (const t of document.querySelectorAll(".tab")) t.classList.toggle("active", t === b);
    for (const p of document.querySelectorAll(".panel")) p.hidden = p.id !== b.dataset.tab;
  };
}

let models = [];
async function loadModels() {
  models = (await api("/v1/models")).data;
  for (const sel of ["play-model", "heads-model-a", "heads-model-b"]) {
    $(sel).innerHTML = models.map((m) => `<option>${esc(m.id)}</option>`).join("");
  }
  // the head explorer: the 1-head model on the left, the 4-head one on the right
  const one = models.find((m) => m.n_head === 1), many = models.find((m) => m.n_head > 1);
  $("heads-model-a").value = (one || models[0]).id;
  $("heads-model-b").value = (many || models[models.length - 1]).id;
  $("key-label").classList.remove("want");
  status(models.length + " model" + (models.length === 1 ? "" : "s"));
}

// ---- tooltip ----------------------------------------------------------------
const tip = $("tip");
function showTip(ev, html) {
  tip.innerHTML = html;
  tip.hidden = false;
  tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 260) + "px";
  tip.style.top = ev.clientY + 16 + "px";
}
const hideTip = () => { tip.hidden = true; };

// ---- playground -------------------------------------------------------------
let abort = null;
$("play-go").onclick = async () => {
  const out = $("play-out");
  out.innerHTML = "";
  const prompt = $("play-prompt").value;
  const p = document.createElement("span");
  p.className = "prompt";
  p.textContent = prompt;
  out.appendChild(p);
  const body = { model: $("play-model").value, prompt, stream: true, logprobs: 5,
                 max_tokens: +$("play-max").value, temperature: +$("play-temp").value,
                 top_k: +$("play-topk").value, top_p: +$("play-topp").value };
  if ($("play-seed").value !== "") body.seed = +$("play-seed").value;
  abort = new AbortController();
  $("play-go").disabled = true;
  $("play-stop").disabled = false;
  let n = 0;
  const t0 = performance.now();
  try {
    const r = await fetch("/v1/completions", { method: "POST", body: JSON.stringify(body),
      headers: headers({ "Content-Type": "application/json" }), signal: abort.signal });
    if (r.status === 401) throw authError(r);
    if (!r.ok) throw new Error((await r.json()).error.message);
    const reader = r.body.getReader(), dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const ev = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (!ev.startsWith("data: ") || ev === "data: [DONE]") continue;
        const c = JSON.parse(ev.slice(6)).choices[0];
        if (!c.logprobs) { if (c.text) out.appendChild(document.createTextNode(c.text)); continue; }
        n++;
        const lp = c.logprobs.token_logprobs[0], prob = Math.exp(lp);
        const s = document.createElement("span");
        s.className = "tok";
        s.textContent = c.text;
        s.dataset.prob = prob.toFixed(4);
        s.dataset.token = c.logprobs.tokens[0];
        s.dataset.top = JSON.stringify(c.logprobs.top_logprobs[0]);
        s.style.background = `rgba(76,139,245,${(0.1 + 0.75 * prob).toFixed(3)})`;
        out.appendChild(s);
      }
    }
    status(`${n} tokens, ${(n / ((performance.now() - t0) / 1000)).toFixed(0)} tok/s`);
  } catch (e) {
    status(e.name === "AbortError" ? "stopped" : "error: " + e.message);
  }
  $("play-go").disabled = false;
  $("play-stop").disabled = true;
};
$("play-stop").onclick = () => abort && abort.abort();
$("play-out").addEventListener("mouseover", (ev) => {
  const s = ev.target.closest(".tok");
  if (!s) return;
  const top = Object.entries(JSON.parse(s.dataset.top));
  const rows = top.map(([t, lp]) => `<tr${t === s.dataset.token ? ' style="font-weight:bold"' : ""}><td>${esc(show(t))}</td><td>${(100 * Math.exp(lp)).toFixed(1)}%</td></tr>`).join("");
  showTip(ev, `<b>${esc(show(s.dataset.token))}</b> ${(100 * s.dataset.prob).toFixed(1)}%<table>${rows}</table>`);
});
$("play-out").addEventListener("mouseout", hideTip);

// ---- head explorer ------------------------------------------------------------
const HEAD_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                     "#bcbd22", "#17becf", "#393b79", "#637939"];

class Column {
  constructor(el, model) {
    this.el = el;
    this.model = model;
    this.off = new Set();
    this.q = 0;
    this.layer = 0;
    el.dataset.model = model;
  }
  async load(text) {
    this.text = text;
    const a = await api("/v1/attention", { model: this.model, prompt: text, top: 10 });
    this.base = a;
    this.data = a;
    this.q = a.n_tokens - 1;
    this.off.clear();
    this.render();
  }
  async toggle(l, h) {
    const k = l + "," + h;
    if (this.off.has(k)) this.off.delete(k); else this.off.add(k);
    const heads_off = [...this.off].map((s) => s.split(",").map(Number));
    this.data = await api("/v1/attention", { model: this.model, prompt: this.text, top: 10, heads_off });
    this.render();
  }
  render() {
    const a = this.data, L = a.n_layer, H = a.n_head, T = a.n_tokens;
    const info = models.find((m) => m.id === this.model);
    const q = this.metrics && this.metrics.quality;
    this.el.innerHTML = `<h2>${esc(this.model)} <small>${L} layers \u00d7 ${H} head${H > 1 ? "s" : ""}, ${T} tokens` +
      `${info ? ", " + (info.n_params / 1e6).toFixed(2) + "M parameters" : ""}</small></h2>` +
      (q ? `<p class="quality" data-nats="${q.nats_per_token}">loss on this text ${q.nats_per_token.toFixed(3)} nats/token ` +
           `(perplexity ${q.perplexity.toFixed(1)}, ${q.tokens} tokens scored); under each head: its class and \u0394loss, ` +
           `the loss it adds when switched off</p>` : "") +
      `<div class="tokens"></div>` +
      `<div class="grid" style="grid-template-columns: repeat(${H}, minmax(48px, 150px))"></div>` +
      `<label>head view, layer <select class="layer">${[...Array(L).keys()].map((l) => `<option>${l}</option>`).join("")}</select></label>` +
      `<svg class="headview"></svg><div class="next"></div>`;
    const toks = this.el.querySelector(".tokens");
    a.tokens.forEach((t, i) => {
      const s = document.createElement("span");
      s.textContent = show(t.text);
      s.dataset.i = i;
      s.title = "token " + i + ", id " + t.id;
      toks.appendChild(s);
    });
    const pick = (ev) => { const s = ev.target.closest("span[data-i]"); if (s) { this.q = +s.dataset.i; this.mark(); } };
    toks.addEventListener("mouseover", pick);
    toks.addEventListener("click", pick);
    const grid = this.el.querySelector(".grid");
    this.cells = [];
    for (let l = 0; l < L; l++) {
      for (let h = 0; h < H; h++) {
        const cell = document.createElement("div");
        cell.className = "cell" + (this.off.has(l + "," + h) ? " off" : "");
        cell.dataset.layer = l;
        cell.dataset.head = h;
        cell.title = `layer ${l} head ${h}: click to switch ${this.off.has(l + "," + h) ? "on" : "off"}`;
        const cv = document.createElement("canvas");
        cv.width = T;
        cv.height = T;
        const ctx = cv.getContext("2d"), img = ctx.createImageData(T, T);
        // pixel (key k, query q): white for 0, deep blue for 1 (red channel 255 - 255 w)
        for (let q = 0; q < T; q++) {
          const row = a.weights[l][h][q];
          for (let k = 0; k < T; k++) {
            const v = Math.round(255 * (k <= q ? row[k] : 0)), o = 4 * (q * T + k);
            img.data[o] = 255 - v;
            img.data[o + 1] = 255 - Math.round(0.6 * v);
            img.data[o + 2] = 255;
            img.data[o + 3] = 255;
          }
        }
        ctx.putImageData(img, 0, 0);
        const mark = document.createElement("div");
        mark.className = "qmark";
        mark.style.cssText = "position:absolute;left:0;right:0;min-height:1px;background:#ffb00066;pointer-events:none";
        const lab = document.createElement("span");
        lab.className = "lab";
        lab.textContent = `L${l} H${h}`;
        const map = document.createElement("div"); // the query mark's percentages are of the map alone
        map.className = "map";
        map.append(cv, mark, lab);
        cell.append(map);
        // the head's metrics from /v1/compare: its class and the loss it costs to switch it off
        const m = this.metrics && this.metrics.heads[l * H + h];
        if (m) {
          const met = document.createElement("div");
          met.className = "met";
          met.dataset.cls = m.class;
          met.dataset.delta = String(m.ablation_delta);
          met.textContent = `${m.class} \u0394loss ${m.ablation_delta >= 0 ? "+" : ""}${m.ablation_delta.toFixed(3)}`;
          cell.title = `layer ${l} head ${h}: ${m.class}; entropy ${m.entropy.toFixed(2)}, prev ${m.prev.toFixed(2)}, ` +
            `sink ${m.sink.toFixed(2)}, induction ${m.induction.toFixed(2)}; switched off the loss ` +
            `${m.ablation_delta >= 0 ? "rises" : "falls"} by ${Math.abs(m.ablation_delta).toFixed(4)} nats/token. ` +
            `Click to switch it ${this.off.has(l + "," + h) ? "on" : "off"}`;
          cell.appendChild(met);
        }
        cell.onclick = () => this.toggle(l, h).catch((e) => status("error: " + e.message));
        grid.appendChild(cell);
        this.cells.push({ cell, mark });
      }
    }
    const sel = this.el.querySelector(".layer");
    sel.value = this.layer;
    sel.onchange = () => { this.layer = +sel.value; this.mark(); };
    this.renderNext();
    this.mark();
  }
  // the selected query: its row in every map, and the head view's lines
  mark() {
    const a = this.data, T = a.n_tokens, H = a.n_head;
    for (const s of this.el.querySelectorAll(".tokens span")) s.classList.toggle("sel", +s.dataset.i === this.q);
    for (const { mark } of this.cells) { // percentages: right whatever the cell's size
      mark.style.top = (100 * this.q) / T + "%";
      mark.style.height = 100 / T + "%";
    }
    const svg = this.el.querySelector(".headview"), rowH = T > 60 ? 9 : 16, W = 320, x0 = 110, x1 = W - 110;
    svg.setAttribute("viewBox", `0 0 ${W} ${T * rowH + 8}`);
    svg.style.height = Math.min(T * rowH + 8, 640) + "px";
    let s = "";
    const fs = rowH - 3;
    a.tokens.forEach((t, i) => {
      const y = 4 + i * rowH + rowH / 2, txt = esc(show(t.text));
      s += `<text x="${x0 - 4}" y="${y + fs / 3}" font-size="${fs}" text-anchor="end"${i === this.q ? ' font-weight="bold"' : ""}>${txt}</text>`;
      s += `<text x="${x1 + 4}" y="${y + fs / 3}" font-size="${fs}">${txt}</text>`;
    });
    for (let h = 0; h < H; h++) {
      const row = a.weights[this.layer][h][this.q];
      for (let k = 0; k <= this.q; k++) {
        if (row[k] < 0.01) continue;
        const y0 = 4 + this.q * rowH + rowH / 2, y1 = 4 + k * rowH + rowH / 2;
        s += `<line class="hv" data-head="${h}" data-key="${k}" x1="${x0}" y1="${y0}" x2="${x1}" y2="${y1}" stroke="${HEAD_COLORS[h % HEAD_COLORS.length]}" stroke-width="2" stroke-opacity="${row[k].toFixed(3)}"/>`;
      }
    }
    svg.innerHTML = s;
  }
  // the next-token distribution, beside the one with every head on
  renderNext() {
    const base = new Map(this.base.next.map((n) => [n.id, Math.exp(n.logprob)]));
    const rows = this.data.next.map((n) => {
      const p = Math.exp(n.logprob), b = base.has(n.id) ? base.get(n.id) : null;
      return `<div class="next-row" data-id="${n.id}" data-p="${p.toFixed(6)}"><span class="bar" style="width:${(120 * p).toFixed(1)}px"></span>` +
        ` ${esc(show(n.text)).padEnd(12)} ${(100 * p).toFixed(1)}%` +
        (this.off.size ? ` <span class="base" style="width:${(120 * (b || 0)).toFixed(1)}px"></span> ${b === null ? "(not in the top 10)" : "was " + (100 * b).toFixed(1) + "%"}` : "") + `</div>`;
    }).join("");
    const offs = [...this.off].map((k) => "L" + k.replace(",", " H")).join(", ");
    this.el.querySelector(".next").innerHTML = `<b>next token</b>${this.off.size ? " with " + offs + " off" : ""}${rows}`;
  }
}

const columns = [];
$("heads-go").onclick = async () => {
  const cols = $("heads-cols");
  cols.innerHTML = "";
  $("heads-agree").textContent = "";
  columns.length = 0;
  const names = [$("heads-model-a").value, $("heads-model-b").value].filter((m, i, all) => all.indexOf(m) === i);
  try {
    for (const m of names) {
      const el = document.createElement("div");
      el.className = "col";
      cols.appendChild(el);
      const c = new Column(el, m);
      columns.push(c);
      await c.load($("heads-text").value);
    }
    status("attention of " + names.join(" and "));
    // each head's metrics (the numbers of `tinygpt compare`) for the same text
    const cmp = await api("/v1/compare", { models: names, text: $("heads-text").value });
    cmp.models.forEach((m, i) => { columns[i].metrics = m; columns[i].render(); });
    const ag = cmp.agreement;
    $("heads-agree").textContent = ag ? `The two agree on the next token at ${(100 * ag.top1).toFixed(1)}% of ` +
      `${ag.positions} positions; mean KL(left\u2016right) ${ag.kl.toFixed(3)} nats.` : "";
    $("heads-agree").dataset.top1 = ag ? String(ag.top1) : "";
    status("attention and head metrics of " + names.join(" and "));
  } catch (e) {
    status("error: " + e.message);
  }
};

window.tinygpt = { columns };
loadModels().catch((e) => status("error: " + e.message));

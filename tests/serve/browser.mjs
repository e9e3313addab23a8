// browser.mjs TINYGPT WORK [--docs DIR] — the page of `tinygpt serve` in
// Debian's chromium through playwright-core: load it, generate (tokens
// arrive shaded by probability; hover shows the alternatives), open the head
// explorer on the shipped 1-head and 4-head pair, check every head map's
// pixels against the weights GET from /v1/attention, hover a token (its row
// is marked, the head view draws that row's weights), switch a head off and
// see the next-token distribution change to what the API gives for that
// mask; every head's class and Δloss shown equal /v1/compare's. Then a
// server with --api-key: the page's key field (401 shown as a message
// without it, works with it, kept in sessionStorage). Screenshot under WORK (and DIR/serve.png with --docs).
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { startServer, Checks } from "./serve_node_util.mjs";
const require = createRequire(process.env.NODE_PATH + "/");
const { chromium } = require("playwright-core");

const [exe, work, flag, docs] = process.argv.slice(2);
const ck = new Checks();
const CHROMIUM = "/usr/bin/chromium";
if (!fs.existsSync(CHROMIUM)) {
  console.log("SKIP: " + CHROMIUM + " is not installed (apt-get install chromium)");
  process.exit(77);
}
const srv = await startServer(exe);
const base = `http://127.0.0.1:${srv.port}`;
const post = async (p, body) => (await fetch(base + p, { method: "POST", body: JSON.stringify(body) })).json();
const browser = await chromium.launch({ executablePath: CHROMIUM,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const outside = [];
  page.on("request", (r) => { if (!r.url().startsWith(base)) outside.push(r.url()); });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(base + "/");
  await page.waitForFunction(() => document.querySelectorAll("#play-model option").length > 0);
  ck.check(await page.locator("#play-model option").count() === 2, "the page lists the two models");

  // playground: a seeded streamed generation
  await page.fill("#play-max", "40");
  await page.fill("#play-seed", "3");
  await page.click("#play-go");
  await page.waitForFunction(() => !document.querySelector("#play-go").disabled && document.querySelectorAll("#play-out .tok").length > 0);
  const toks = await page.$$eval("#play-out .tok", (ss) => ss.map((s) => ({ t: s.textContent, p: +s.dataset.prob, bg: s.style.background })));
  const api = await post("/v1/completions", { model: "shakespeare-4h", prompt: "ROMEO:", max_tokens: 40, seed: 3, temperature: 0.8, top_k: 40, top_p: 0.95 });
  ck.check(toks.map((t) => t.t).join("") === api.choices[0].text, `generated text == the API's for the seed (${toks.length} token spans)`);
  ck.check(toks.length >= 30 && toks.every((t) => t.p > 0 && t.p <= 1 && t.bg.startsWith("rgba")), "each token shaded by its probability");
  await page.locator("#play-out .tok").nth(2).hover();
  const tipRows = await page.locator("#tip tr").count();
  ck.check(await page.isVisible("#tip") && tipRows === 5, `hover a token: its ${tipRows} alternatives`);
  await page.screenshot({ path: path.join(work, "serve-playground.png") });

  // head explorer: the 1-head and the 4-head model side by side
  await page.click("#tab-heads");
  const text = "ROMEO: But soft, what light through yonder window breaks? It is the east";
  await page.fill("#heads-text", text);
  await page.click("#heads-go");
  await page.waitForFunction(() => document.querySelectorAll(".col .cell").length === 4 * 1 + 4 * 4);
  // each head's class and Δloss under its map, from /v1/compare on the same text
  await page.waitForFunction(() => document.querySelectorAll(".col .cell .met").length === 4 * 1 + 4 * 4);
  const models = await page.$$eval(".col", (cs) => cs.map((c) => c.dataset.model));
  const cmp = await post("/v1/compare", { models, text });
  for (const [i, m] of models.entries()) {
    const shown = await page.$$eval(`.col[data-model="${m}"] .cell`, (cs) => cs.map((c) => {
      const met = c.querySelector(".met");
      return { l: +c.dataset.layer, h: +c.dataset.head, cls: met && met.dataset.cls, delta: met && +met.dataset.delta,
               text: met && met.textContent };
    }));
    const want = cmp.models[i].heads;
    const bad = shown.filter((s) => { const w = want.find((x) => x.layer === s.l && x.head === s.h);
      return !w || s.cls !== w.class || s.delta !== w.ablation_delta || !s.text.includes(w.class) ||
        !s.text.includes(Math.abs(w.ablation_delta).toFixed(3)); });
    ck.check(cmp.models[i].name === m && shown.length === want.length && bad.length === 0,
      `${m}: every head shows /v1/compare's class and \u0394loss (${shown.length} heads, e.g. ${shown[0].text}` +
      `${bad.length ? "; differ: " + JSON.stringify(bad[0]) : ""})`);
    const nats = await page.$eval(`.col[data-model="${m}"] .quality`, (e) => +e.dataset.nats);
    ck.check(nats === cmp.models[i].quality.nats_per_token, `${m}: the loss shown is /v1/compare's (${nats})`);
  }
  const top1 = await page.$eval("#heads-agree", (e) => +e.dataset.top1);
  ck.check(top1 === cmp.agreement.top1, `the agreement line shows /v1/compare's top-1 agreement (${top1})`);
  ck.check(JSON.stringify(models) === JSON.stringify(["shakespeare-1h", "shakespeare-4h"]), "by default the 1-head model beside the 4-head one: " + models);
  for (const m of models) {
    const a = await post("/v1/attention", { model: m, prompt: text, top: 10 });
    // every head map's pixels decode to the API's weights (red = 255 - 255 w)
    const worst = await page.evaluate(({ m, a }) => {
      let worst = 0;
      for (const cell of document.querySelectorAll(`.col[data-model="${m}"] .cell`)) {
        const l = +cell.dataset.layer, h = +cell.dataset.head, T = a.n_tokens;
        const px = cell.querySelector("canvas").getContext("2d").getImageData(0, 0, T, T).data;
        for (let q = 0; q < T; q++)
          for (let k = 0; k < T; k++) {
            const w = k <= q ? a.weights[l][h][q][k] : 0;
            worst = Math.max(worst, Math.abs((255 - px[4 * (q * T + k)]) / 255 - w));
          }
      }
      return worst;
    }, { m, a });
    ck.check(worst <= 0.6 / 255 + 1e-4, `${m}: every head map shows the API's weights (max error ${(worst * 255).toFixed(2)}/255)`);
  }
  // hover a token of the 4-head model: it is selected and the head view draws its row
  const col = page.locator('.col[data-model="shakespeare-4h"]');
  const q = 5;
  await col.locator(`.tokens span[data-i="${q}"]`).hover();
  const a4 = await post("/v1/attention", { model: "shakespeare-4h", prompt: text, top: 10 });
  const lines = await col.locator("line.hv").evaluateAll((ls) => ls.map((l) => [+l.dataset.head, +l.dataset.key, +l.getAttribute("stroke-opacity")]));
  const okLines = lines.length > 0 && lines.every(([h, k, o]) => Math.abs(a4.weights[0][h][q][k] - o) < 1e-3);
  const sel = await col.locator(".tokens span.sel").getAttribute("data-i");
  ck.check(sel === String(q) && okLines, `hover token ${q}: selected, ${lines.length} head-view lines with the API's layer-0 weights`);
  // switch a head off: the distribution changes to the API's for that mask
  const before = await col.locator(".next-row").evaluateAll((rs) => rs.map((r) => [+r.dataset.id, +r.dataset.p]));
  await col.locator('.cell[data-layer="3"][data-head="1"]').click();
  await page.waitForFunction(() => document.querySelector('.col[data-model="shakespeare-4h"] .cell[data-layer="3"][data-head="1"]').classList.contains("off"));
  const after = await col.locator(".next-row").evaluateAll((rs) => rs.map((r) => [+r.dataset.id, +r.dataset.p]));
  const abl = await post("/v1/attention", { model: "shakespeare-4h", prompt: text, top: 10, heads_off: [[3, 1]] });
  const want = abl.next.map((n) => [n.id, Math.exp(n.logprob)]);
  const same = (x, y) => x.length === y.length && x.every(([i, p], k) => i === y[k][0] && Math.abs(p - y[k][1]) < 1e-5);
  ck.check(!same(before, after) && same(after, want), `L3 H1 off: the next-token distribution changed (top ${after[0][0]} ${after[0][1].toFixed(3)}, was ${before[0][0]} ${before[0][1].toFixed(3)}) to the API's`);
  await col.locator(`.tokens span[data-i="${q}"]`).hover();
  const shot = path.join(work, "serve.png");
  await page.screenshot({ path: shot, fullPage: true });
  ck.check(fs.statSync(shot).size > 10000, "screenshot " + shot);
  if (flag === "--docs" && docs) fs.copyFileSync(shot, path.join(docs, "serve.png"));
  ck.check(outside.length === 0, "the page asked nothing of any other host" + (outside.length ? ": " + outside[0] : ""));
  ck.check(errors.length === 0, "no script errors" + (errors.length ? ": " + errors[0] : ""));
  await keyChecks();
} finally {
  await browser.close();
  ck.check(await srv.stop() === 0, "SIGINT: exit 0");
}

// A server with --api-key: the page says a key is needed (the 401 as a
// clear message), refuses a wrong one, works with the right one, and keeps
// it in sessionStorage only (not localStorage, not in any URL).
async function keyChecks() {
  const KEY = "k3y-s3cret";
  const ks = await startServer(exe, ["--api-key", KEY]);
  const kbase = `http://127.0.0.1:${ks.port}`;
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const urls = [];
    page.on("request", (r) => urls.push(r.url()));
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(kbase + "/");
    await page.waitForFunction(() => document.querySelector("#status").textContent.includes("API key"));
    const msg = await page.textContent("#status");
    ck.check(msg.includes("401") && msg.includes("--api-key") && await page.locator("#play-model option").count() === 0 &&
             await page.$eval("#status", (e) => e.classList.contains("error")) &&
             await page.$eval("#key-label", (e) => e.classList.contains("want")),
             `--api-key, no key given: the page says so (${msg}) and lists no models`);
    await page.fill("#api-key", "wrong");
    await page.locator("#api-key").press("Tab");
    await page.waitForFunction(() => document.querySelector("#status").textContent.includes("refused"));
    ck.check(await page.locator("#play-model option").count() === 0, "a wrong key: " + await page.textContent("#status"));
    await page.fill("#api-key", KEY);
    await page.locator("#api-key").press("Tab");
    await page.waitForFunction(() => document.querySelectorAll("#play-model option").length === 2);
    ck.check(!(await page.$eval("#key-label", (e) => e.classList.contains("want"))), "the right key: the models load, the key field is no longer marked");
    await page.fill("#play-max", "20");
    await page.fill("#play-seed", "5");
    await page.click("#play-go");
    await page.waitForFunction(() => !document.querySelector("#play-go").disabled && document.querySelectorAll("#play-out .tok").length > 0);
    const got = (await page.$$eval("#play-out .tok", (ss) => ss.map((x) => x.textContent))).join("");
    const r = await fetch(kbase + "/v1/completions", { method: "POST", headers: { Authorization: "Bearer " + KEY },
      body: JSON.stringify({ model: "shakespeare-4h", prompt: "ROMEO:", max_tokens: 20, seed: 5, temperature: 0.8, top_k: 40, top_p: 0.95 }) });
    const want = (await r.json()).choices[0].text;
    ck.check(got === want, `with the key: a streamed generation, the API's text for the seed (${JSON.stringify(got.slice(0, 30))})`);
    const stored = await page.evaluate(() => ({ s: sessionStorage.getItem("tinygpt-api-key"), l: localStorage.length }));
    ck.check(stored.s === KEY && stored.l === 0 && !urls.some((u) => u.includes(KEY)),
             "the key is in sessionStorage only (not localStorage, not in any of " + urls.length + " URLs)");
    await page.reload();
    const reloaded = await page.waitForFunction(() => document.querySelectorAll("#play-model option").length === 2,
      null, { timeout: 10000 }).then(() => true, () => false);
    ck.check(reloaded, "after a reload the tab still has its key (sessionStorage): the models load");
    ck.check(errors.length === 0, "--api-key page: no script errors" + (errors.length ? ": " + errors[0] : ""));
    await page.close();
  } finally {
    ck.check(await ks.stop() === 0, "--api-key server: SIGINT, exit 0");
  }
}
process.exit(ck.finish());

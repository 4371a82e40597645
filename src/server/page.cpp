// server/page: the chat page served at `/` — one dependency-free HTML file (inline CSS and JS) that
// streams /v1/chat/completions, shows reasoning collapsed, and prints tokens/s under each reply — and the
// three files browsers ask of a web UI at llama-server's paths (/sw.js, /manifest.webmanifest,
// /_app/version.json), public like the page.
#include "server/routes.h"

namespace bee::server {

namespace {

const char kPage[] = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Bee chat</title><link rel="manifest" href="manifest.webmanifest">
<style>
body{font-family:system-ui,sans-serif;margin:0;display:flex;flex-direction:column;height:100vh;background:#fafafa}
header{padding:8px 16px;background:#222;color:#fc0;display:flex;gap:12px;align-items:center}
header input{width:14em}
#log{flex:1;overflow-y:auto;padding:16px}
.msg{max-width:52em;margin:8px auto;padding:8px 12px;border-radius:8px;white-space:pre-wrap}
.user{background:#e3efff}.assistant{background:#fff;border:1px solid #ddd}
.stats{font-size:12px;color:#777;margin-top:4px}
details{color:#666;font-size:14px;margin-bottom:6px}
form{display:flex;gap:8px;padding:12px;max-width:54em;margin:0 auto;width:100%;box-sizing:border-box}
textarea{flex:1;height:4em}
</style></head><body>
<header><b>Bee</b><span id="model"></span><label>API key <input id="key" type="password"></label>
<label>max tokens <input id="max" type="number" value="1024" min="1" style="width:5em"></label>
<button id="clear" type="button">New chat</button></header>
<div id="log"></div>
<form id="form"><textarea id="input" placeholder="Message (Enter to send, Shift+Enter for a new line)"></textarea>
<button id="send" type="submit">Send</button></form>
<script>
const log = document.getElementById('log'), input = document.getElementById('input');
const keyBox = document.getElementById('key');
keyBox.value = localStorage.getItem('bee-key') || '';
keyBox.onchange = () => localStorage.setItem('bee-key', keyBox.value);
let history = [];
fetch('/v1/models').then(r => r.json()).then(j => {
  document.getElementById('model').textContent = j.data[0].id; }).catch(() => {});
function bubble(role) {
  const d = document.createElement('div'); d.className = 'msg ' + role; log.appendChild(d); return d;
}
document.getElementById('clear').onclick = () => { history = []; log.innerHTML = ''; };
input.addEventListener('keydown', e => {
  if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); document.getElementById('form').requestSubmit(); }
});
document.getElementById('form').onsubmit = async e => {
  e.preventDefault();
  const text = input.value.trim(); if (!text) return;
  input.value = '';
  bubble('user').textContent = text;
  history.push({role: 'user', content: text});
  const box = bubble('assistant');
  const think = document.createElement('details'), summary = document.createElement('summary');
  summary.textContent = 'reasoning'; think.appendChild(summary);
  const thinkText = document.createElement('div'); think.appendChild(thinkText);
  const content = document.createElement('div'), stats = document.createElement('div');
  stats.className = 'stats'; box.append(content, stats);
  const headers = {'Content-Type': 'application/json'};
  if (keyBox.value) headers['Authorization'] = 'Bearer ' + keyBox.value;
  let reply = '', t0 = performance.now(), n = 0;
  try {
    const res = await fetch('/v1/chat/completions', {method: 'POST', headers,
      body: JSON.stringify({messages: history, stream: true,
        max_tokens: parseInt(document.getElementById('max').value) || 1024})});
    if (!res.ok) { const j = await res.json(); throw new Error(j.error ? j.error.message : res.statusText); }
    const reader = res.body.getReader(), dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const {value, done} = await reader.read(); if (done) break;
      buf += dec.decode(value, {stream: true});
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, i); buf = buf.slice(i + 2);
        if (!ev.startsWith('data: ')) continue;
        const data = ev.slice(6); if (data === '[DONE]') continue;
        const j = JSON.parse(data);
        if (j.error) throw new Error(j.error.message);
        const delta = j.choices && j.choices[0] ? j.choices[0].delta : null;
        if (delta && delta.reasoning_content) {
          if (!think.parentNode) box.insertBefore(think, content);
          thinkText.textContent += delta.reasoning_content; n++;
        }
        if (delta && delta.content) { reply += delta.content; content.textContent = reply; n++; }
        if (j.timings) stats.textContent = j.timings.predicted_n + ' tokens, ' +
          j.timings.predicted_per_second.toFixed(1) + ' tokens/s';
        log.scrollTop = log.scrollHeight;
      }
    }
    if (!stats.textContent) stats.textContent = (n / ((performance.now() - t0) / 1000)).toFixed(1) + ' tokens/s';
    history.push({role: 'assistant', content: reply});
  } catch (err) {
    stats.textContent = 'error: ' + err.message;
  }
};
</script></body></html>
)HTML";

// A browser that ran llama-server's web UI (an offline-first app) on this address keeps its service worker,
// which would go on serving the cached old UI; it checks /sw.js for updates, and this one takes over and
// unregisters itself, so the page comes from the server again. Bee's page registers no worker.
const char kServiceWorker[] = R"JS(// Bee: no offline cache; replaces a web UI's cached service worker
self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (e) => e.waitUntil(
  caches.keys().then((ks) => Promise.all(ks.map((k) => caches.delete(k))))
    .then(() => self.registration.unregister())
    .then(() => self.clients.matchAll({type: 'window'}))
    .then((cs) => cs.forEach((c) => c.navigate(c.url)))));
)JS";

const char kManifest[] = R"JSON({"name":"Bee chat","short_name":"Bee","start_url":".","display":"standalone",)JSON"
                         R"JSON("background_color":"#fafafa","theme_color":"#222222","icons":[]})JSON";

}  // namespace

void register_page_routes(RouteTable& svr, ServerContext& ctx) {
    if (!ctx.params.webui) return;  // --no-webui
    auto page = guarded(
        [](const httplib::Request&, httplib::Response& res) { res.set_content(kPage, "text/html; charset=utf-8"); });
    svr.Get("/", page);
    svr.Get("/index.html", page);
    svr.Get("/sw.js", guarded([](const httplib::Request&, httplib::Response& res) {
                res.set_header("Cache-Control", "no-cache");
                res.set_content(kServiceWorker, "application/javascript; charset=utf-8");
            }));
    svr.Get("/manifest.webmanifest", guarded([](const httplib::Request&, httplib::Response& res) {
                res.set_content(kManifest, "application/manifest+json");
            }));
    svr.Get("/_app/version.json", guarded([](const httplib::Request&, httplib::Response& res) {
                res.set_header("Cache-Control", "no-cache");
                res.set_content(R"({"version":"bee"})", "application/json");
            }));
}

}  // namespace bee::server

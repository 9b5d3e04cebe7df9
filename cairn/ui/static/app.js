// cairn viewer: the only script the pages load (the CSP forbids inline script).
// It refreshes the live feed and counts down pending forgets; every page works without it.
"use strict";

function pollFeed(box) {
  const url = box.dataset.poll;
  const every = Number(box.dataset.every) || 2000;
  const status = document.getElementById("feed-status");
  async function tick() {
    try {
      const response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
      if (!response.ok) throw new Error(String(response.status));
      // Server-rendered and escaped by the viewer's templates: no transcript text is parsed as markup.
      box.innerHTML = await response.text();
      if (status) { status.textContent = "updated " + new Date().toLocaleTimeString(); status.className = "live"; }
    } catch (error) {
      if (status) { status.textContent = "cannot reach the viewer (" + error.message + ")"; status.className = "error"; }
    }
    setTimeout(tick, every);
  }
  setTimeout(tick, every);
}

function countDown(spans) {
  setInterval(() => {
    let due = false;
    for (const span of spans) {
      const left = Math.max(0, Number(span.textContent) - 1);
      span.textContent = String(left);
      if (left === 0) due = true;
    }
    if (due) setTimeout(() => window.location.reload(), 1000);
  }, 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  const feed = document.querySelector("[data-poll]");
  if (feed) pollFeed(feed);
  const spans = document.querySelectorAll(".countdown");
  if (spans.length) countDown(spans);
});

// cairn viewer: the only script the pages load (the CSP forbids inline script).
// It refreshes the live feed and the home page's daemon card, and counts down pending forgets; every
// page works without it.
"use strict";

// A box with data-poll="URL" is replaced by URL's answer every data-every ms; the element whose id is
// data-status (it may sit inside the box) says when that last worked.
function poll(box) {
  const url = box.dataset.poll;
  const every = Number(box.dataset.every) || 2000;
  function say(text, className) {
    const status = document.getElementById(box.dataset.status || "");  // looked up after a swap replaced it
    if (status) { status.textContent = text; status.className = className; }
  }
  async function tick() {
    try {
      const response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
      if (!response.ok) throw new Error(String(response.status));
      // Server-rendered and escaped by the viewer's templates: no transcript text is parsed as markup.
      box.innerHTML = await response.text();
      say("updated " + new Date().toLocaleTimeString(), "live");
    } catch (error) {
      say("cannot reach the viewer (" + error.message + ")", "error");
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
  for (const box of document.querySelectorAll("[data-poll]")) poll(box);
  const spans = document.querySelectorAll(".countdown");
  if (spans.length) countDown(spans);
});

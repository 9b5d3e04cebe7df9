// cairn viewer: the only script the pages load (the CSP forbids inline script).
// It refreshes the live feed and the home page's daemon card, counts down pending forgets, and opens wide
// figures where they matter; every page works without it.
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

// A figure wider than the screen scrolls in its box; data-scroll says what the box opens on: "end" for its
// right end (the home chart's newest bars, which a phone would otherwise never show without a swipe), or a
// selector of what to centre (the graph's centre idea). Without the script the box opens at its left.
function openAt(box) {
  if (box.scrollWidth <= box.clientWidth) return;
  const where = box.dataset.scroll;
  if (where === "end") {
    box.scrollLeft = box.scrollWidth - box.clientWidth;
    return;
  }
  const target = box.querySelector(where);
  if (!target) return;
  const outer = box.getBoundingClientRect();
  const inner = target.getBoundingClientRect();
  box.scrollLeft += inner.left + inner.width / 2 - (outer.left + box.clientWidth / 2);
}

document.addEventListener("DOMContentLoaded", () => {
  for (const box of document.querySelectorAll("[data-scroll]")) openAt(box);
  for (const box of document.querySelectorAll("[data-poll]")) poll(box);
  const spans = document.querySelectorAll(".countdown");
  if (spans.length) countDown(spans);
});

// Live progress: every element with data-live-job="ID" has its fields (data-field="...")
// kept current by polling /dashboard/live, with the SDK's back-off (x1.5 after each poll,
// x2 and never sooner than Retry-After after a 429, capped), paused while the tab is hidden.
"use strict";
(function () {
  var body = document.body;
  var START = Number(body.dataset.pollStart || 1000);
  var CEILING = Number(body.dataset.pollCeiling || 10000);
  var delay = START;
  var timer = null;

  function liveIds() {
    var ids = [];
    document.querySelectorAll("[data-live-job]").forEach(function (el) {
      if (ids.indexOf(el.dataset.liveJob) < 0) { ids.push(el.dataset.liveJob); }
    });
    return ids.slice(0, 100);
  }

  function show(el, job) {
    el.querySelectorAll("[data-field]").forEach(function (field) {
      var name = field.dataset.field;
      if (name === "bar") {
        field.value = job.progress_percent;
        field.textContent = job.progress_percent + "%";
      } else if (name === "status") {
        field.textContent = job.status;
        field.className = "status status-" + job.status;
      } else if (name in job) {
        field.textContent = String(job[name]);
      }
    });
    if (job.final) {
      el.removeAttribute("data-live-job");
      // What only an open job offers (its Cancel button) goes when it ends.
      el.querySelectorAll("[data-open-only]").forEach(function (part) { part.hidden = true; });
      el.dispatchEvent(new CustomEvent("seojobs:final", { bubbles: true, detail: job }));
    }
  }

  function schedule(wait) {
    clearTimeout(timer);
    timer = null;
    if (!document.hidden && liveIds().length) { timer = setTimeout(poll, wait); }
  }

  function poll() {
    var ids = liveIds();
    if (!ids.length || document.hidden) { return; }
    fetch("/dashboard/live?ids=" + ids.join(","), {
      headers: { Accept: "application/json" }, credentials: "same-origin"
    }).then(function (response) {
      if (response.status === 401) { window.location.reload(); return; }
      if (response.status === 429) {
        var told = Number(response.headers.get("Retry-After") || 0) * 1000;
        delay = Math.max(Math.min(delay * 2, CEILING), told);
        schedule(delay);
        return;
      }
      if (!response.ok) { throw new Error("HTTP " + response.status); }
      return response.json().then(function (data) {
        data.jobs.forEach(function (job) {
          document.querySelectorAll('[data-live-job="' + job.id + '"]').forEach(function (el) {
            show(el, job);
          });
        });
        delay = Math.min(delay * 1.5, CEILING);
        schedule(delay);
      });
    }).catch(function () {
      delay = Math.min(delay * 2, CEILING);
      schedule(delay);
    });
  }

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      clearTimeout(timer);
      timer = null;
    } else {
      delay = START;  // back in view: catch up at once
      poll();
    }
  });

  // Forms that ask before doing something that cannot be undone.
  document.addEventListener("submit", function (event) {
    var ask = event.target.dataset && event.target.dataset.confirm;
    if (ask && !window.confirm(ask)) { event.preventDefault(); }
  });

  schedule(delay);
}());

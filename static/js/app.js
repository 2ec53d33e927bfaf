// Behaviour every page shares (loaded by base.html): copy buttons, "select all"
// checkboxes, and toasts — including the one that says an htmx request failed,
// since htmx 2 swaps nothing on an error status. Keyboard shortcuts live in
// keyboard.js, loaded with the cheatsheet on the pages that have them.
(() => {
  "use strict";

  const TOAST_MS = 4000;
  const ERROR_TOAST_MS = 6000;
  const UNDO_TOAST_MS = 8000; // how long a decision's Undo is offered
  let toastTimer = null;

  // The reviewer's time zone, for the dates the server writes and the days it reads
  // (reasoningbank_site.middleware.ReviewerTimeZoneMiddleware); pages after this one use it.
  try {
    const zone = encodeURIComponent(Intl.DateTimeFormat().resolvedOptions().timeZone || "");
    if (zone && !document.cookie.split("; ").includes(`rb_tz=${zone}`)) {
      document.cookie = `rb_tz=${zone}; path=/; max-age=31536000; SameSite=Lax`;
    }
  } catch (_) {
    // No Intl time zone: the site's time zone is used.
  }

  function clearToastAfter(ms) {
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => {
      const toast = document.getElementById("toast");
      if (toast) toast.textContent = "";
    }, ms);
  }

  function showToast(text, ms) {
    const toast = document.getElementById("toast");
    if (!toast) return;
    toast.textContent = text;
    clearToastAfter(ms);
  }

  document.addEventListener("htmx:responseError", (event) => {
    showToast(`That did not work (HTTP ${event.detail.xhr.status}). Reload and try again.`, ERROR_TOAST_MS);
  });

  document.addEventListener("htmx:sendError", () => {
    showToast("The server could not be reached. Check the connection and try again.", ERROR_TOAST_MS);
  });

  // A toast the server swapped in out-of-band fades after a few seconds (one with Undo a little later).
  const toastMs = (toast) => (toast.querySelector("[data-undo]") ? UNDO_TOAST_MS : TOAST_MS);
  document.addEventListener("htmx:oobAfterSwap", (event) => {
    if (event.detail.target && event.detail.target.id === "toast") clearToastAfter(toastMs(event.detail.target));
  });
  // So does one the page came with (an Undo offered after a decision that loaded this page).
  const initial = document.getElementById("toast");
  if (initial && initial.textContent.trim()) clearToastAfter(toastMs(initial));

  // keyboard.js (and others) ask for a toast with this event.
  document.addEventListener("rb:toast", (event) => showToast(event.detail.text, TOAST_MS));

  // A plain (non-htmx) POST form shows progress too: htmx forms use hx-disabled-elt.
  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (event.defaultPrevented || form.method !== "post" || form.hasAttribute("hx-post")) return;
    form.classList.add("busy");
    setTimeout(() => form.querySelectorAll("button").forEach((b) => (b.disabled = true)), 0); // after the submitter's value is sent
  });
  // Back to a page kept in the browser's back/forward cache: its forms work again.
  window.addEventListener("pageshow", (event) => {
    if (!event.persisted) return;
    document.querySelectorAll("form.busy").forEach((form) => {
      form.classList.remove("busy");
      form.querySelectorAll("button").forEach((b) => (b.disabled = false));
    });
  });

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-copy]");
    if (button) {
      const source = document.getElementById(button.dataset.copy);
      if (!source) return;
      navigator.clipboard.writeText(source.innerText.trim()).then(() => {
        const label = button.textContent;
        button.textContent = "Copied";
        setTimeout(() => (button.textContent = label), 1500);
      });
      return;
    }
    const all = event.target.closest("[data-check-all]");
    if (all) {
      document.querySelectorAll(`input[type=checkbox][name="${all.dataset.checkAll}"]`)
        .forEach((box) => (box.checked = all.checked));
    }
  });

  // The queue's guidelines panel: folding or unfolding it is remembered for the reviewer
  // (memories.review.views.guidelines). "toggle" does not bubble, hence the capture; it also fires for a
  // panel rendered open, which the data-folded comparison ignores.
  document.addEventListener("toggle", (event) => {
    const panel = event.target;
    if (!(panel instanceof HTMLDetailsElement) || !panel.dataset.foldUrl) return;
    const folded = panel.open ? "0" : "1";
    if (panel.dataset.folded === folded) return;
    panel.dataset.folded = folded;
    panel.querySelector("[data-guidelines-fold]")?.toggleAttribute("hidden", folded === "1");
    panel.querySelector("[data-guidelines-keep]")?.toggleAttribute("hidden", folded === "0");
    htmx.ajax("POST", panel.dataset.foldUrl, { source: panel, values: { folded }, swap: "none" });
  }, true);
})();

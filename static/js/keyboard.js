// Keyboard-first review. Rows carry data-row (and data-open: where Enter goes);
// an item page carries data-item with forms marked data-action="approve|reject"
// and a link data-action="edit". Every shortcut has a real link or form behind it.
// Only keyboard handling lives here; toasts and shared clicks are in app.js.
(() => {
  "use strict";
  const typing = (el) =>
    el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  const rows = () => Array.from(document.querySelectorAll("[data-rows] [data-row]"));
  let current = -1;

  function focusRow(index) {
    const list = rows();
    if (!list.length) return null;
    index = Math.max(0, Math.min(index, list.length - 1));
    list.forEach((row) => row.classList.remove("focused"));
    const row = list[index];
    row.classList.add("focused");
    row.setAttribute("tabindex", "-1");
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest" });
    current = index;
    return row;
  }

  function focusedRow() {
    const list = rows();
    const row = list.find((r) => r.classList.contains("focused"));
    current = row ? list.indexOf(row) : -1;
    return row || null;
  }

  // The scope an action applies to: the focused row, else the item on the page.
  function scope() {
    return focusedRow() || document.querySelector("[data-item]");
  }

  function submit(form) {
    if (!form) return false;
    if (form.requestSubmit) form.requestSubmit();
    else form.submit();
    return true;
  }

  function approve() {
    const box = scope();
    if (!box) return;
    const form = box.querySelector('form[data-action="approve"]');
    if (submit(form) && box.matches("[data-row]")) {
      // Move on once the row is replaced, so "a a a" works down the queue.
      const index = current;
      document.body.addEventListener("htmx:afterSettle", () => focusRow(index + 1), { once: true });
    }
  }

  function reject() {
    const box = scope();
    if (!box) return;
    const form = box.querySelector('form[data-action="reject"]');
    if (!form) return;
    const reason = form.querySelector('[name="reason"]');
    if (reason && reason.type !== "hidden") {
      reason.focus();
      return;
    }
    const text = window.prompt("Why reject this item?");
    if (text === null || !text.trim()) return;
    reason.value = text.trim();
    submit(form);
  }

  function edit() {
    const box = scope();
    if (!box) return;
    const link = box.querySelector('[data-action="edit"]');
    if (link) return link.click();
    if (box.dataset.edit) window.location.href = box.dataset.edit;
  }

  function open() {
    const row = focusedRow();
    if (row && row.dataset.open) window.location.href = row.dataset.open;
  }

  function move(delta) {
    if (rows().length) {
      const row = focusedRow();
      focusRow(row ? current + delta : 0);
      return;
    }
    // One-item pages (the focus view): j/k go to the next/previous item.
    const link = document.querySelector(delta > 0 ? "[data-next]" : "[data-prev]");
    if (link) window.location.href = link.href;
  }

  function cheatsheet() {
    const dialog = document.getElementById("cheatsheet");
    if (dialog && !dialog.open) dialog.showModal();
  }

  document.addEventListener("click", (event) => {
    if (event.target.closest("[data-cheatsheet]")) cheatsheet();
    const row = event.target.closest("[data-rows] [data-row]");
    if (row && !event.target.closest("a, button, input, label")) {
      rows().forEach((r) => r.classList.remove("focused"));
      row.classList.add("focused");
    }
  });

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (typing(target)) {
      if (event.key === "Escape") target.blur();
      return;
    }
    const actions = {
      j: () => move(1), k: () => move(-1), a: approve, r: reject, e: edit, o: open, Enter: open,
      x: () => { const box = focusedRow()?.querySelector("input[type=checkbox]"); if (box) box.checked = !box.checked; },
      "?": cheatsheet,
    };
    if (event.key === "Enter" && target.closest && target.closest("a, button")) return;
    const action = actions[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  });
})();

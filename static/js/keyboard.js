// Keyboard-first review. Rows carry data-row, data-status (and data-open: where
// Enter goes; data-edit: where e goes); an item page carries data-item with forms
// marked data-action="approve|reject|archive" and a link data-action="edit".
// Every shortcut has a real link or form behind it, and every one is listed in
// the ? sheet (templates/includes/cheatsheet.html).
// While an action's request is in flight, keys are not applied (a toast says
// so), so nothing typed meanwhile lands on another item. After a row's request
// the focus goes to that row if it is still to decide, else to the next one.
// Toasts and shared clicks are in app.js.
(() => {
  "use strict";
  const typing = (el) =>
    !!el &&
    (el.isContentEditable ||
      /^(TEXTAREA|SELECT)$/.test(el.tagName) ||
      (el.tagName === "INPUT" && !/^(checkbox|radio|button|submit|reset|hidden)$/.test(el.type)));
  const rows = () => Array.from(document.querySelectorAll("[data-rows] [data-row]"));
  const undecided = (row) => row.dataset.status === "proposed";
  let busy = 0; // action (non-GET) requests in flight
  let after = null; // what to do once the current action request is answered
  let focusedId = ""; // the focused row's id: htmx's settle step resets a swapped row's class

  function say(text) {
    document.dispatchEvent(new CustomEvent("rb:toast", { detail: { text } }));
  }

  function focusRow(row) {
    if (!row) return null;
    rows().forEach((r) => r.classList.remove("focused"));
    row.classList.add("focused");
    focusedId = row.id;
    row.setAttribute("tabindex", "-1");
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest" });
    return row;
  }

  function focusedRow() {
    return rows().find((r) => r.classList.contains("focused")) || null;
  }

  // The nearest row still to decide after (delta 1) or before (-1) `from`; from the edge when `from` is null.
  function nextUndecided(from, delta) {
    const list = rows();
    let i = from ? list.indexOf(from) : delta > 0 ? -1 : list.length;
    for (i += delta; i >= 0 && i < list.length; i += delta) if (undecided(list[i])) return list[i];
    return null;
  }

  // After a row was answered: stay on it while it is still to decide, else go on to the next one.
  function settleOn(row) {
    if (!row) return;
    focusRow(undecided(row) ? row : nextUndecided(row, 1) || nextUndecided(row, -1) || row);
  }

  // The scope an action applies to: the focused row, else the item on the page.
  function scope() {
    return focusedRow() || document.querySelector("[data-item]");
  }

  function submit(form) {
    if (!form) return false;
    // htmx wires swapped-in content (a row, the toast) only when it settles: a key may come first.
    if (form.hasAttribute("hx-post") && window.htmx) window.htmx.process(form);
    if (form.requestSubmit) form.requestSubmit();
    else form.submit();
    return true;
  }

  function decided(box, verb) {
    if (box.matches("[data-row]")) {
      say(`Already ${box.dataset.status}: nothing to ${verb}. j / k skip to the items still to decide.`);
    } else {
      say(`This item is ${box.dataset.status || "decided"}: it cannot be ${verb}d here.`);
    }
  }

  function approve() {
    const box = scope();
    if (!box) return say("Pick an item first: j / k move between rows.");
    const form = box.querySelector('form[data-action="approve"]');
    if (!form || (box.matches("[data-row]") && !undecided(box))) return decided(box, "approve");
    submit(form);
  }

  function reject() {
    const box = scope();
    if (!box) return say("Pick an item first: j / k move between rows.");
    const form = box.querySelector('form[data-action="reject"]');
    if (!form || (box.matches("[data-row]") && !undecided(box))) return decided(box, "reject");
    const fields = form.querySelector("[data-reject-fields]");
    if (fields) fields.hidden = false; // a queue row: its reason field opens in place
    const link = box.querySelector("[data-reject-link]");
    if (link) link.hidden = true;
    const reason = form.querySelector('[name="reason"]');
    if (reason) reason.focus();
  }

  function closeReject(row) {
    const fields = row && row.querySelector("[data-reject-fields]");
    if (!fields || fields.hidden) return false;
    fields.hidden = true;
    fields.querySelector('[name="reason"]').value = "";
    const link = row.querySelector("[data-reject-link]");
    if (link) link.hidden = false;
    focusRow(row);
    return true;
  }

  function edit() {
    const box = scope();
    if (!box) return say("Pick an item first: j / k move between rows.");
    const link = box.querySelector('[data-action="edit"]');
    if (link) return link.click();
    if (box.dataset.edit) window.location.href = box.dataset.edit;
    else say("This item cannot be edited.");
  }

  function cancelEdit() {
    const cancel = document.querySelector("#edit-form [data-cancel]");
    if (!cancel) return false;
    cancel.click();
    return true;
  }

  // Put the cursor in the edit form's title as soon as the form is shown.
  function focusEditTitle() {
    const title = document.querySelector("#edit-form [name=title]");
    if (title && document.activeElement !== title) {
      title.focus();
      title.setSelectionRange(title.value.length, title.value.length);
    }
  }

  function open() {
    const row = focusedRow();
    if (row && row.dataset.open) window.location.href = row.dataset.open;
  }

  function move(delta) {
    if (rows().length) {
      const target = nextUndecided(focusedRow(), delta);
      if (target) return focusRow(target);
      if (!nextUndecided(null, 1)) return say("Every item on this page is decided: n for the next page.");
      return say(delta > 0 ? "No item to decide below: n for the next page." : "No item to decide above.");
    }
    // One-item pages (the focus view): j/k go to the next/previous item.
    const link = document.querySelector(delta > 0 ? "[data-next]" : "[data-prev]");
    if (link) window.location.href = link.href;
    else say(delta > 0 ? "This is the last item of the queue." : "This is the first item of the queue.");
  }

  function page(delta) {
    const link = document.querySelector(delta > 0 ? "[data-rows] a[rel=next]" : "[data-rows] a[rel=prev]");
    if (link) return (window.location.href = link.href);
    if (!rows().length && document.querySelector("[data-item]")) return move(delta);
    say(delta > 0 ? "This is the last page." : "This is the first page.");
  }

  function search() {
    const field = document.querySelector("[data-search], #id_q, input[type=search]");
    if (!field) return say("There is no search field on this page.");
    field.focus();
    field.select();
  }

  function undo() {
    const form = document.querySelector("#toast form[data-undo]");
    if (!form) return say("Nothing to undo: Undo is offered for a few seconds after a decision.");
    submit(form);
  }

  function cheatsheet() {
    const dialog = document.getElementById("cheatsheet");
    if (dialog && !dialog.open) dialog.showModal();
  }

  // The focus view's evidence panel: y agrees with the verdict (a human label, no reason); n opens the relabel form.
  function agree() {
    const form = document.querySelector("#evidence form[data-agree]");
    if (!form) {
      if (document.querySelector("#evidence form[data-relabel]")) return say("There is no verdict to agree with yet: n to label it.");
      return say("y agrees with the source trajectory's verdict: open an item from the queue first.");
    }
    submit(form);
  }

  function relabel() {
    const box = document.querySelector("#evidence [data-relabel-box]");
    if (!box) return page(1); // no evidence panel: n is the next page of the queue
    box.open = true;
    const form = box.querySelector("form[data-relabel]");
    const checked = form.querySelector("input[name=label]:checked");
    const other = Array.from(form.querySelectorAll("input[name=label]")).find((r) => r.value !== box.dataset.currentVerdict);
    (checked || other || form.querySelector("input[name=label]")).focus();
  }

  // s: leave this item undecided and go on (the next row, or the next item of the queue).
  function skip() {
    if (rows().length) return move(1);
    const link = document.querySelector("[data-next]");
    if (link) return void (window.location.href = link.href);
    say("This is the last item of the queue: nothing to skip to.");
  }

  function toggleSelected() {
    const box = focusedRow()?.querySelector("input[type=checkbox]");
    if (box) box.checked = !box.checked;
  }

  // --- requests: keys wait for them; focus follows their answer ---------------------

  // Reads, and background requests (the presence heartbeat, [data-background]), never hold the keys.
  const holdsKeys = (event) =>
    event.detail.requestConfig.verb !== "get" && !event.detail.elt.closest("[data-background]");

  document.addEventListener("htmx:beforeRequest", (event) => {
    if (!holdsKeys(event)) return;
    busy += 1;
    // A request that answers a row (its own forms, or the toast's Undo aimed at it).
    const target = event.detail.target;
    const row = event.detail.elt.closest("[data-row]") || (target && target.matches("[data-row]") ? target : null);
    after = row ? () => settleOn(document.getElementById(row.id)) : null;
  });

  document.addEventListener("htmx:afterRequest", (event) => {
    if (!holdsKeys(event)) return;
    // A client redirect loads another page: keys stay held until it is there.
    if (event.detail.xhr && event.detail.xhr.getResponseHeader("HX-Redirect")) return;
    busy = Math.max(0, busy - 1);
    const job = after;
    after = null;
    if (job) {
      job();
      setTimeout(keepFocusMark, 100); // and once more after any settling still to come
    }
  });

  let focusedBeforeSwap = "";
  document.addEventListener("htmx:beforeSwap", (event) => {
    if (event.detail.target && event.detail.target.id === "queue") focusedBeforeSwap = focusedRow()?.id || "";
  });

  document.addEventListener("htmx:afterSwap", (event) => {
    const target = event.detail.target;
    if (target && target.id === "item-panel") focusEditTitle();
    // The queue after a filter change: the keys go to the rows at once (j starts at the
    // top, or the focused row stays focused) — but never while a search is being typed.
    if (target && target.id === "queue") {
      const trigger = event.detail.requestConfig && event.detail.requestConfig.triggeringEvent;
      if (trigger && trigger.type === "input" && typing(document.activeElement)) return;
      if (typing(document.activeElement)) document.activeElement.blur();
      const kept = focusedBeforeSwap && document.getElementById(focusedBeforeSwap);
      if (kept && undecided(kept)) focusRow(kept);
    }
  });

  // htmx settles a swapped element by restoring its new attributes: mark the focused row again.
  function keepFocusMark() {
    const row = focusedId && document.getElementById(focusedId);
    if (row && row.matches("[data-rows] [data-row]") && !row.classList.contains("focused")) {
      rows().forEach((r) => r.classList.remove("focused"));
      row.classList.add("focused");
    }
  }
  document.addEventListener("htmx:afterSettle", keepFocusMark);

  focusEditTitle(); // the focus view opened with ?edit=1 (e on a queue row)

  document.addEventListener("click", (event) => {
    if (event.target.closest("[data-cheatsheet]")) cheatsheet();
    const row = event.target.closest("[data-rows] [data-row]");
    if (row && !event.target.closest("a, button, input, label")) {
      rows().forEach((r) => r.classList.remove("focused"));
      row.classList.add("focused");
      focusedId = row.id;
    }
  });

  const actions = {
    j: () => move(1),
    k: () => move(-1),
    n: relabel,
    y: agree,
    s: skip,
    p: () => page(-1),
    a: approve,
    r: reject,
    e: edit,
    o: open,
    Enter: open,
    u: undo,
    x: toggleSelected,
    "/": search,
    "?": cheatsheet,
  };

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (document.querySelector("dialog[open]")) return; // a modal (this sheet, a confirmation) has the keys
    const target = event.target;
    if (typing(target)) {
      if (event.key !== "Escape") return;
      // Esc in a field: cancel the edit, close the row's reject field, or just leave the field
      // (keeping the browser's own Esc, which empties a search field).
      if (target.closest("#edit-form")) {
        event.preventDefault();
        return void cancelEdit();
      }
      if (target.closest("[data-reject-fields]")) {
        event.preventDefault();
        return void closeReject(target.closest("[data-row]"));
      }
      target.blur();
      return;
    }
    if (event.key === "Enter" && target.closest && target.closest("a, button")) return;
    if (event.key === "Enter" && target.type === "radio" && target.closest("form[data-relabel]")) {
      event.preventDefault(); // browsers do not submit a form from a radio button
      return void submit(target.form);
    }
    if (event.key === "Escape") {
      // Esc outside a field: cancel an open edit, or close the focused row's reject field.
      if (cancelEdit() || closeReject(focusedRow())) event.preventDefault();
      return;
    }
    const action = actions[event.key];
    if (!action) return;
    event.preventDefault();
    if (busy && event.key !== "?") {
      say("Still saving the last action: that key was not applied. Press it again once it is done.");
      return;
    }
    action();
  });
})();

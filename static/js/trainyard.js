// Small progressive enhancements; every page works without them.
(function () {
  "use strict";
  // Remember the browser's time zone so the server shows times in it.
  try {
    var tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (tz && document.cookie.indexOf("__Host-trainyard-tz=" + tz) === -1) {
      document.cookie = "__Host-trainyard-tz=" + tz + "; path=/; max-age=31536000; SameSite=Lax; Secure";
    }
  } catch (e) { /* old browser: times stay in the server's zone */ }

  // Selects marked data-autosubmit submit their form on change. The language
  // select, on a page with a form that carries its values through the switch
  // (New job), submits that form instead, so nothing typed is lost.
  document.addEventListener("change", function (event) {
    var el = event.target;
    if (!(el.matches && el.matches("select[data-autosubmit]") && el.form)) {
      return;
    }
    var carry = el.name === "language" && document.querySelector("button[data-language-carry]");
    if (carry && carry.form && carry.form.elements._language) {
      carry.form.elements._language.value = el.value;
      carry.click();
      return;
    }
    el.form.requestSubmit ? el.form.requestSubmit() : el.form.submit();
  });

  // A section that re-renders itself on each change (hx-sync="this:queue last") waits for its
  // request in flight instead of aborting it (an abort is an error in the console), and swaps
  // in a response only if nothing was typed in it since that request left: the next change's
  // request carries it, so a re-render never overwrites what is being typed.
  var LIVE = '[hx-sync*="queue last"]';
  // Live sections nest (New job's resource checks sit inside its resources section): each counts.
  function typedIn(event) {
    var section = event.target.closest && event.target.closest(LIVE);
    while (section) {
      section.liveChanges = (section.liveChanges || 0) + 1;
      section = section.parentElement && section.parentElement.closest(LIVE);
    }
  }
  // Captured before htmx sees the change, so a request counts the change that sent it.
  document.addEventListener("input", typedIn, true);
  document.addEventListener("change", typedIn, true);
  document.addEventListener("htmx:beforeRequest", function (event) {
    var section = event.detail.elt.closest && event.detail.elt.closest(LIVE);
    if (section) {
      event.detail.xhr.liveSection = section;
      event.detail.xhr.liveChanges = section.liveChanges || 0;
    }
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    if (xhr.liveSection && (xhr.liveSection.liveChanges || 0) !== xhr.liveChanges) {
      event.detail.shouldSwap = false;
    } else if (xhr.liveSection && event.detail.shouldSwap) {
      xhr.keptField = typingField(event.detail.target);
    }
  });
  // The field with the focus stays itself through its section's re-render, with the new one's
  // attributes: htmx gives the new field the focus but not the caret or the selection (a number
  // field's cannot be read), so "10" selected to be typed over would take a typed "7" as "710".
  // Only while the answer shows the same value: one the server changed is the new field's.
  function typingField(section) {
    var field = document.activeElement;
    var typing = field && field.id && section.contains(field) &&
      (field.tagName === "TEXTAREA" ||
       (field.tagName === "INPUT" && !/^(radio|checkbox|hidden|submit|button)$/.test(field.type)));
    return typing ? field : null;
  }
  document.addEventListener("htmx:afterSwap", function (event) {
    var kept = event.detail.xhr && event.detail.xhr.keptField;
    var fresh = kept && document.getElementById(kept.id);
    if (!fresh || fresh === kept || fresh.tagName !== kept.tagName || fresh.value !== kept.value) {
      return;
    }
    event.detail.xhr.keptField = null;
    Array.prototype.slice.call(kept.attributes).forEach(function (attribute) {
      if (!fresh.hasAttribute(attribute.name)) { kept.removeAttribute(attribute.name); }
    });
    Array.prototype.forEach.call(fresh.attributes, function (attribute) {
      kept.setAttribute(attribute.name, attribute.value);
    });
    fresh.replaceWith(kept);
    kept.focus({preventScroll: true});
  });

  // Answers to requests for one target (a polled panel and its own search form) may cross.
  // A poll only refreshes what is shown, so none leaves while a reader's request for its target
  // is in flight; otherwise the answer of the latest request sent wins: an older one is dropped,
  // and one whose target an older answer replaced meanwhile lands on what replaced it. An answer
  // that swaps nothing in its target (hx-swap="none": New job's checks, whose messages land out
  // of band) never hides an older answer that re-renders the target, and is dropped once a later
  // re-render shows newer messages. htmx fires a detached target's events on it alone (they never
  // reach document), so each target gets the guard on itself when its first request leaves.
  /* global htmx */
  var sentCount = 0;
  var shownOrder = {};  // target id -> order of the request whose answer re-rendered it
  var messagesOrder = {};  // target id -> order of the latest answer of messages only
  var readerRequests = {};  // target id -> a reader's requests in flight
  function swapStyleOf(detail) {
    // The element that sent the request says how its answer swaps; detail.elt is the target here.
    var sender = detail.requestConfig && detail.requestConfig.elt;
    var declared = sender && sender.closest && sender.closest("[hx-swap]");
    var spec = declared ? declared.getAttribute("hx-swap") : "";
    return spec.trim().split(/\s+/)[0] || htmx.config.defaultSwapStyle;
  }
  function latestWins(event) {
    var detail = event.detail, id = detail.target.id;
    var current = document.getElementById(id);
    var order = detail.xhr.sentOrder || 0, style = swapStyleOf(detail);
    var messagesOnly = style === "none";
    if (!detail.shouldSwap) { return; }
    var newer = messagesOnly ? Math.max(shownOrder[id] || 0, messagesOrder[id] || 0) : shownOrder[id] || 0;
    if (!current || order < newer) {
      detail.shouldSwap = false;
      return;
    }
    if (messagesOnly) { messagesOrder[id] = order; } else { shownOrder[id] = order; }
    if (current !== detail.target) {
      // Swapped here, not by htmx: it would look for the answer's out-of-band parts beside
      // the (replaced) element that sent the request, and find none.
      detail.shouldSwap = false;
      htmx.swap(current, detail.serverResponse, {swapStyle: style});
    }
  }
  function isPoll(detail) {
    var trigger = detail.elt.getAttribute && detail.elt.getAttribute("hx-trigger");
    return !detail.requestConfig.triggeringEvent && /\bevery\b/.test(trigger || "");
  }
  document.addEventListener("htmx:beforeRequest", function (event) {
    var detail = event.detail, target = detail.target, id = target && target.id;
    if (!id) { return; }
    if (isPoll(detail)) {
      if (readerRequests[id]) { event.preventDefault(); return; }
    } else {
      readerRequests[id] = (readerRequests[id] || 0) + 1;
      detail.xhr.addEventListener("loadend", function () { readerRequests[id] -= 1; });
    }
    detail.xhr.sentOrder = ++sentCount;
    if (!target.latestWins) {
      target.latestWins = true;
      target.addEventListener("htmx:beforeSwap", latestWins);
    }
  });

  // Controls that need this script are rendered hidden; show them once it runs.
  function showScripted(root) {
    var scripted = root.querySelectorAll ? root.querySelectorAll("[data-copy], #log-follow-box") : [];
    Array.prototype.forEach.call(scripted, function (el) { el.hidden = false; });
  }
  document.addEventListener("DOMContentLoaded", function () { showScripted(document); });
  document.addEventListener("htmx:load", function (event) { showScripted(event.target); });

  // Copy buttons copy their data-copy text and say so (data-copied).
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-copy]");
    if (!button) { return; }
    var text = button.getAttribute("data-copy");
    var said = function () {
      button.textContent = button.getAttribute("data-copied") || button.textContent;
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(said);
    } else {  // plain http: the old way, through a selection
      var area = document.createElement("textarea");
      area.value = text;
      document.body.appendChild(area);
      area.select();
      if (document.execCommand("copy")) { said(); }
      area.remove();
    }
  });

  // The job log follows its end while "Follow the log" is checked; unchecked, the reader's
  // place in it is kept when the panel refreshes.
  function following() {
    var box = document.getElementById("log-follow");
    return !box || box.checked;
  }
  function applyFollow(savedTop) {
    var log = document.getElementById("job-log");
    if (!log) { return; }
    log.classList.toggle("log-tail", following());
    if (!following() && savedTop !== null) { log.scrollTop = savedTop; }
  }
  var savedTop = null;
  document.addEventListener("htmx:beforeSwap", function (event) {
    var log = document.getElementById("job-log");
    savedTop = log && !following() ? log.scrollTop : null;
  });
  document.addEventListener("htmx:afterSwap", function () { applyFollow(savedTop); });
  document.addEventListener("change", function (event) {
    if (event.target.id === "log-follow") {
      var log = document.getElementById("job-log");
      // Leaving the end: keep the lines in view where they are.
      var top = log ? log.scrollHeight - log.clientHeight + (log.scrollTop < 0 ? log.scrollTop : 0) : null;
      applyFollow(event.target.checked ? null : top);
    }
  });
})();

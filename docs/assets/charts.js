// Draws every chart of a report page with the vendored Vega bundle (no network).
// Each chart's Vega-Lite spec sits in the data-spec attribute of a div.rg-vega. Material's
// document$ fires on first load and after every instant navigation, so charts survive both.
// The Vega bundle (about 300 KB gzipped) is loaded only when a page has a chart: a chart page
// names it in an async script in its head (docs/hooks/reportgen_hooks.py); after an instant
// navigation from a page without charts, this file fetches it from beside itself.
(function () {
  var self = document.currentScript && document.currentScript.src;
  var bundleUrl = self ? new URL("vendor/vega-bundle.js", self).href : null;
  var loading = null;

  function loadVega() {
    if (typeof vegaEmbed === "function") return Promise.resolve();
    var early = document.getElementById("rg-vega-bundle"); // a chart page's own async script
    if (!loading && early) {
      loading = new Promise(function (resolve, reject) {
        early.addEventListener("load", resolve);
        early.addEventListener("error", function () { loading = null; reject(new Error("could not load " + early.src)); });
      });
    }
    if (!loading) {
      loading = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = bundleUrl;
        s.onload = resolve;
        s.onerror = function () { loading = null; reject(new Error("could not load " + bundleUrl)); };
        document.head.appendChild(s);
      });
    }
    return loading;
  }

  // Size a spec to the width its figure has (a phone gets a narrow chart with readable labels,
  // not a wide one scaled down). Single and layered views fit their whole width, axes included;
  // a faceted view gets cells that fit (small multiples wrap to fewer columns).
  function fit(spec, width) {
    if (spec.width === "container") {
      spec.width = width;
      spec.autosize = { type: "fit-x", contains: "padding" };
    } else if (spec.spec && spec.facet && typeof spec.spec.width === "number") {
      var rowLabels = spec.facet.row && !(spec.facet.row.header && spec.facet.row.header.labels === false);
      var label = rowLabels ? 110 : 72; // y axis (and row header), beside the cells
      if (spec.columns) {
        var cell = spec.spec.width + 60;
        var cols = Math.max(1, Math.min(spec.columns, Math.floor(width / Math.max(cell * 0.75, 1))));
        spec.columns = cols;
        spec.spec.width = Math.max(120, Math.floor(width / cols) - 60);
      } else {
        spec.spec.width = Math.max(160, width - label);
      }
    }
    return spec;
  }

  // Material's dark scheme ("slate"): text, axes and grid in light greys on the page's background,
  // instead of a white card. Read at drawing time; charts are redrawn when the reader switches.
  function dark() {
    return document.body.getAttribute("data-md-color-scheme") === "slate";
  }
  var DARK = {
    background: null,
    title: { color: "#e8eaed", subtitleColor: "#bdc1c6" },
    axis: { labelColor: "#bdc1c6", titleColor: "#e8eaed", gridColor: "#3c4043", domainColor: "#80868b", tickColor: "#80868b" },
    legend: { labelColor: "#bdc1c6", titleColor: "#e8eaed" },
    header: { labelColor: "#bdc1c6", titleColor: "#e8eaed" },
  };
  // Marks drawn in near-black that must read on the dark page too (render/charts.py LIMIT_COLOR: a
  // memory cap's rule and label); every other colour of the palette reads on both backgrounds.
  var DARK_COLORS = { "#202124": "#e8eaed" };
  function themed(spec) {
    if (!dark()) return spec;
    var text = JSON.stringify(spec);
    Object.keys(DARK_COLORS).forEach(function (c) { text = text.split('"' + c + '"').join('"' + DARK_COLORS[c] + '"'); });
    spec = JSON.parse(text);
    var config = spec.config || {};
    Object.keys(DARK).forEach(function (k) {
      config[k] = DARK[k] && typeof DARK[k] === "object" ? Object.assign({}, config[k] || {}, DARK[k]) : DARK[k];
    });
    spec.config = config;
    return spec;
  }

  // A page's first chart carries its spec in data-spec; the others name the file that holds theirs
  // (data-spec-src, next to the page), fetched once per page.
  var files = {};
  function specOf(el) {
    var src = el.getAttribute("data-spec-src");
    if (!src) {
      return new Promise(function (resolve) { resolve(JSON.parse(el.getAttribute("data-spec"))); });
    }
    var url = new URL(src, location.href).href;
    if (!files[url]) {
      files[url] = fetch(url).then(function (r) {
        if (!r.ok) throw new Error(url + ": HTTP " + r.status);
        return r.json();
      });
    }
    return files[url].then(function (doc) {
      if (!doc[el.getAttribute("data-chart")]) throw new Error("no spec for " + el.getAttribute("data-chart"));
      return JSON.parse(JSON.stringify(doc[el.getAttribute("data-chart")])); // fit() and themed() change it
    });
  }

  function drawOne(el) {
    return specOf(el).then(function (spec) { return embed(el, spec); }, function (err) {
      el.setAttribute("data-drawn", "error");
      el.textContent = "Chart data unreadable: " + err;
    });
  }

  // vega-tooltip's table, less the rows without a value: at a step where an arm has no data (it
  // failed early, or ran fewer steps) the step chart's tooltip would otherwise read "NaN".
  function tooltipHtml(value, sanitize) {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return sanitize(String(value));
    var html = value.title ? "<h2>" + sanitize(String(value.title)) + "</h2>" : "";
    var rows = Object.keys(value).filter(function (k) {
      var v = value[k];
      return k !== "title" && v !== undefined && v !== null && v !== "NaN" && v !== "undefined";
    });
    if (rows.length) {
      html += "<table>" + rows.map(function (k) {
        var v = value[k];
        if (typeof v === "object") v = JSON.stringify(v);
        return '<tr><td class="key">' + sanitize(k) + '</td><td class="value">' + sanitize(String(v)) + "</td></tr>";
      }).join("") + "</table>";
    }
    return html;
  }

  function embed(el, spec) {
    // vega-embed keeps 38 px on the right for its "..." menu (.vega-embed.has-actions).
    var width = (el.clientWidth || el.parentElement.clientWidth || 720) - 40;
    return vegaEmbed(el, themed(fit(spec, width)), {
      renderer: "svg",
      actions: { export: true, source: false, compiled: false, editor: false },
      tooltip: { theme: dark() ? "dark" : "light", formatTooltip: tooltipHtml },
    }).then(function () {
      tapShowsTooltip(el);
      el.setAttribute("data-drawn", "yes");
    }).catch(function (err) {
      el.setAttribute("data-drawn", "error");
      el.textContent = "Chart failed: " + err;
      console.error(err);
    });
  }

  // A tap on a phone: the browser sends pointerdown, pointerup, then pointerout (the finger left),
  // which hides a tooltip as soon as it would show. After the tap, the same point is replayed as a
  // mouse move, so the crosshair, its dot and the tooltip show where the finger was (until the next
  // tap elsewhere); the charts' selections ignore a touch's pointerout (render/charts.py HOVER_CLEAR).
  function tapShowsTooltip(el) {
    if (el.__rgTap) return;
    el.__rgTap = true;
    el.addEventListener("pointerup", function (e) {
      if (e.pointerType === "mouse") return;
      var x = e.clientX, y = e.clientY;
      setTimeout(function () {
        var target = document.elementFromPoint(x, y);
        if (!target || !el.contains(target)) return;
        var init = { bubbles: true, cancelable: true, composed: true, clientX: x, clientY: y, pointerType: "mouse", isPrimary: true };
        target.dispatchEvent(new PointerEvent("pointerover", init));
        target.dispatchEvent(new PointerEvent("pointermove", init));
      }, 0);
    });
  }

  // The reader switched between light and dark: draw the charts again in the other scheme.
  var scheme = null;
  new MutationObserver(function () {
    var now = document.body.getAttribute("data-md-color-scheme");
    if (scheme === null) { scheme = now; return; }
    if (now === scheme) return;
    scheme = now;
    document.querySelectorAll("div.rg-vega[data-drawn='yes']").forEach(function (el) {
      el.removeAttribute("data-drawn");
      el.textContent = "";
    });
    draw();
  }).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
  scheme = document.body.getAttribute("data-md-color-scheme");

  // One chart at a time, in page order, letting the browser paint in between: the first chart
  // shows as soon as it is drawn instead of after every chart of the page has been compiled.
  function drawAll(els, i) {
    if (i >= els.length) return;
    if (!els[i].isConnected) return; // instant navigation replaced the page: its own draw() runs
    drawOne(els[i]).then(function () {
      requestAnimationFrame(function () { setTimeout(function () { drawAll(els, i + 1); }, 0); });
    });
  }

  function draw() {
    var els = Array.prototype.slice.call(document.querySelectorAll("div.rg-vega:not([data-drawn])"));
    if (!els.length) return;
    els.forEach(function (el) { el.setAttribute("data-drawn", "pending"); });
    loadVega().then(function () {
      drawAll(els, 0);
    }).catch(function (err) {
      els.forEach(function (el) {
        el.setAttribute("data-drawn", "error");
        el.textContent = "Charts unavailable: " + err.message;
      });
      console.error(err);
    });
  }
  if (typeof document$ !== "undefined") {
    document$.subscribe(draw);
  } else {
    document.addEventListener("DOMContentLoaded", draw);
  }
})();

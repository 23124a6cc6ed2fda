// Draws every chart of a report page with the vendored Vega bundle (no network).
// Each chart's Vega-Lite spec sits in the data-spec attribute of a div.rg-vega. Material's
// document$ fires on first load and after every instant navigation, so charts survive both.
(function () {
  function draw() {
    document.querySelectorAll("div.rg-vega:not([data-drawn])").forEach(function (el) {
      el.setAttribute("data-drawn", "pending");
      var spec;
      try {
        spec = JSON.parse(el.getAttribute("data-spec"));
      } catch (err) {
        el.setAttribute("data-drawn", "error");
        el.textContent = "Chart data unreadable: " + err;
        return;
      }
      // "container" width needs a sized parent inside vega-embed's wrapper: give it the width now.
      if (spec.width === "container") {
        spec.width = Math.max(320, (el.clientWidth || el.parentElement.clientWidth || 720) - 60);
      }
      vegaEmbed(el, spec, {
        renderer: "svg",
        actions: { export: true, source: false, compiled: false, editor: false },
      }).then(function () {
        el.setAttribute("data-drawn", "yes");
      }).catch(function (err) {
        el.setAttribute("data-drawn", "error");
        el.textContent = "Chart failed: " + err;
        console.error(err);
      });
    });
  }
  if (typeof document$ !== "undefined") {
    document$.subscribe(draw);
  } else {
    document.addEventListener("DOMContentLoaded", draw);
  }
})();

// Chart tooltips. The charts are SVG drawn at build time (reportgen/render/chart_svg.py); a mark
// that has something to say carries it in data-tip: its text, or, when its mark's group holds the
// rows all its items share (data-tips, a template), its own values put into it. This shows it in one box, kept inside the
// window, while a mouse is on the mark, or after a tap on it (a phone has no hover); a tap
// elsewhere, or scrolling, hides it. One listener on the document, so pages loaded by Material's
// instant navigation need nothing more.
(function () {
  var tip = null, on = null;
  function box() {
    if (!tip) {
      tip = document.createElement("div");
      tip.className = "rg-tip";
      tip.setAttribute("role", "tooltip");
      document.body.appendChild(tip);
    }
    return tip;
  }
  // chart_svg.fill_template: each "{i}" is the item's i-th value; a row whose value it lacks is left out.
  function text(el) {
    var tip = el.getAttribute("data-tip"), group = el.closest("[data-tips]");
    if (!group) return tip;
    var values = tip.split("|");
    return group.getAttribute("data-tips").split("\n").map(function (row) {
      var m = row.match(/\{(\d+)\}/);
      return !m ? row : values[+m[1]] ? row.replace(m[0], values[+m[1]]) : null;
    }).filter(function (row) { return row !== null; }).join("\n");
  }
  function show(el, x, y) {
    var t = box();
    t.textContent = text(el);
    t.style.display = "block";
    if (on && on !== el) on.classList.remove("rg-on");
    on = el;
    el.classList.add("rg-on");
    var vw = document.documentElement.clientWidth, vh = document.documentElement.clientHeight;
    var w = t.offsetWidth, h = t.offsetHeight;
    var left = Math.max(4, Math.min(x + 14, vw - w - 4));
    var top = y + 18 + h <= vh - 4 ? y + 18 : Math.max(4, y - h - 12);
    t.style.left = left + "px";
    t.style.top = top + "px";
  }
  function hide() {
    if (tip) tip.style.display = "none";
    if (on) on.classList.remove("rg-on");
    on = null;
  }
  function mark(e) {
    return e.target && e.target.closest ? e.target.closest(".rg-svg [data-tip]") : null;
  }
  document.addEventListener("pointermove", function (e) {
    if (e.pointerType !== "mouse") return;
    var el = mark(e);
    if (el) show(el, e.clientX, e.clientY);
    else if (on) hide();
  });
  document.addEventListener("click", function (e) {
    var el = mark(e);
    if (el) show(el, e.clientX, e.clientY);
    else hide();
  });
  window.addEventListener("scroll", function () { if (on) hide(); }, { passive: true });
})();

// The companion site's charts (snaptax.site): every element of class snaptax-chart holds a Vega spec in a
// <script type="application/json"> child and, perhaps, a static picture of it; vega-embed (vendored beside this file)
// draws the spec as SVG, interactive (tooltips, the actions menu without the online editor), in place of the picture.
// A chart that fails keeps its picture and says why in the console.
(function () {
  const defaults = {renderer: "svg", actions: {export: true, source: true, compiled: false, editor: false}};
  document.querySelectorAll(".snaptax-chart").forEach(function (chart) {
    const spec = JSON.parse(chart.querySelector("script.snaptax-chart-spec").textContent);
    const options = Object.assign({}, defaults, JSON.parse(chart.dataset.embedOptions || "{}"));
    const view = document.createElement("div");
    view.className = "snaptax-chart-view";
    chart.appendChild(view);
    vegaEmbed(view, spec, options).then(function () {
      const picture = chart.querySelector("img.snaptax-chart-fallback");
      if (picture) picture.remove();
      chart.classList.add("snaptax-chart-drawn");
    }).catch(function (error) {
      view.remove();
      console.error("snaptax chart not drawn: " + error);
    });
  });
})();

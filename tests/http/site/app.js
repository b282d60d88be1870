// Reports what the page loaded into #result, once the image has loaded too:
// "css:ok js:ok img:WxH" when the stylesheet applied and the PNG decoded.
window.addEventListener("load", () => {
  const css = getComputedStyle(document.body).backgroundColor === "rgb(1, 2, 3)" ? "ok" : "missing";
  const img = document.getElementById("logo");
  document.getElementById("result").textContent =
      `css:${css} js:ok img:${img.naturalWidth}x${img.naturalHeight}`;
});

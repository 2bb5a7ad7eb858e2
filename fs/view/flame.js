"use strict";
// flame.svg's script (fs/flame.js, embedded by fs/flame.c): tooltips in the
// details line, click to zoom, Reset Zoom, a search that highlights matches
// and shows their share, Ctrl-F/F3 to search, Escape to reset.
var details, unzoombtn, searchbtn, matchedtxt, frames, total = 0, zoomed = null, term = null;
var PAD = 10, FW = 1180, FS = 12;
function $(id) { return document.getElementById(id); }
function init() {
	var svg = document.documentElement;
	details = $("details").firstChild;
	unzoombtn = $("unzoom");
	searchbtn = $("search");
	matchedtxt = $("matched").firstChild;
	FW = +svg.getAttribute("width") - 2 * PAD;
	frames = Array.prototype.slice.call($("frames").children);
	frames.forEach(function (g) {
		var r = g.querySelector("rect"), t = g.querySelector("title").textContent;
		g.fx = +r.getAttribute("fg:x");
		g.fw = +r.getAttribute("fg:w");
		g.fy = +r.getAttribute("y");
		g.fill = r.getAttribute("fill");
		g.fname = t.substring(0, t.lastIndexOf(" ("));
		g.onmouseover = function () { details.nodeValue = t; };
		g.onmouseout = function () { details.nodeValue = " "; };
		g.onclick = function () { zoom(g); };
	});
	if (frames.length) total = frames[0].fw;
	unzoombtn.onclick = function () { unzoom(); };
	searchbtn.onclick = function () { if (term) search(null); else ask(); };
	window.addEventListener("keydown", function (e) {
		if (e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && e.keyCode === 70)) {
			e.preventDefault();
			ask();
		} else if (e.key === "Escape") {
			unzoom();
			search(null);
		}
	});
}
function fit(t, name, w) {
	var n = Math.floor((w - 6) / (FS * 0.59));
	t.textContent = n < 3 ? "" : name.length <= n ? name : name.substring(0, n - 2) + "..";
}
function place(g, x, w) {
	var r = g.querySelector("rect"), t = g.querySelector("text");
	r.setAttribute("x", x.toFixed(1));
	r.setAttribute("width", w.toFixed(1));
	t.setAttribute("x", (x + 3).toFixed(1));
	fit(t, g.fname, w);
}
function zoom(z) {
	zoomed = z;
	unzoombtn.classList.remove("hide");
	frames.forEach(function (g) {
		var show = true, x = PAD, w = FW;
		g.classList.remove("parent");
		if (g.fy > z.fy) {
			if (g.fx <= z.fx && g.fx + g.fw >= z.fx + z.fw) g.classList.add("parent");
			else show = false;
		} else if (g !== z) {
			show = g.fy < z.fy && g.fx >= z.fx && g.fx + g.fw <= z.fx + z.fw;
			x = PAD + (g.fx - z.fx) / z.fw * FW;
			w = g.fw / z.fw * FW;
		}
		g.classList.toggle("hide", !show);
		if (show) place(g, x, w);
	});
	search(term);
}
function unzoom() {
	zoomed = null;
	unzoombtn.classList.add("hide");
	frames.forEach(function (g) {
		g.classList.remove("hide");
		g.classList.remove("parent");
		place(g, PAD + g.fx / total * FW, g.fw / total * FW);
	});
	search(term);
}
function ask() {
	var s = prompt("Search for (a regular expression):", term ? term.source : "");
	if (s === null) return;
	try {
		search(s === "" ? null : new RegExp(s));
	} catch (e) {
		alert(e);
	}
}
function search(re) {
	var spans = [], base = zoomed ? zoomed : frames[0], sum = 0, end = -1;
	term = re;
	searchbtn.firstChild.nodeValue = re ? "Reset Search" : "Search";
	frames.forEach(function (g) {
		var hit = re && !g.classList.contains("hide") && re.test(g.fname);
		g.querySelector("rect").setAttribute("fill", hit ? "rgb(230,0,230)" : g.fill);
		if (hit && g.fy <= base.fy) spans.push([g.fx, g.fx + g.fw]);
	});
	spans.sort(function (a, b) { return a[0] - b[0]; });
	spans.forEach(function (s) {
		if (s[1] <= end) return;
		sum += s[1] - Math.max(s[0], end);
		end = s[1];
	});
	matchedtxt.nodeValue = re && base ? "Matched: " + (100 * sum / base.fw).toFixed(1) + "%" : " ";
}

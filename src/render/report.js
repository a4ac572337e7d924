// report.js - makes a runmon report explorable, inline and offline (the
// report's Content-Security-Policy names this script by its hash). Per run:
// the wheel or a drag zooms the step axis of every chart together, a
// double-click (or 0, Escape) resets, + - and the arrows zoom and pan a
// focused chart; the pointer shows the step, losses, buckets and ranks under
// it; a bucket's legend button hides or shows it. It reads the SVG it sits
// in (data-x0/x1: the chart's steps; data-pad/w: its plot area; data-lo/hi/
// log: the loss scale; data-m4: the finer grid a zoom re-aggregates), and
// without script the charts stay as drawn.
(function () {
	'use strict';
	var NS = 'http://www.w3.org/2000/svg', COLS = 420;

	function num(el, k) { return parseFloat(el.getAttribute('data-' + k)); }
	function el(tag, attrs, parent) {
		var e = document.createElementNS(NS, tag);
		for (var k in attrs) e.setAttribute(k, attrs[k]);
		if (parent) parent.appendChild(e);
		return e;
	}
	function fmt(v) { return isFinite(v) ? String(Number(v.toPrecision(4))) : '?'; }
	function stepText(v) { return Math.round(v).toLocaleString('en-US'); }
	function stepLabel(v) {
		var a = Math.abs(v);
		if (a >= 1e9) return Number((v / 1e9).toPrecision(4)) + 'G';
		if (a >= 1e6) return Number((v / 1e6).toPrecision(4)) + 'M';
		if (a >= 1e4) return Number((v / 1e3).toPrecision(4)) + 'k';
		return String(Math.round(v));
	}
	// round ticks, 1, 2 or 5 times a power of ten, as the C side draws them
	function ticks(lo, hi, want) {
		var raw = (hi - lo) / want, mag = Math.pow(10, Math.floor(Math.log10(raw))), s = mag, out = [];
		if (raw / mag > 5) s = 10 * mag; else if (raw / mag > 2) s = 5 * mag; else if (raw / mag > 1) s = 2 * mag;
		for (var v = Math.ceil(lo / s) * s; v <= hi + s * 1e-9 && out.length < 12; v += s) out.push(v);
		return out;
	}

	function Chart(svg) {
		this.svg = svg;
		this.x0 = num(svg, 'x0'); this.x1 = num(svg, 'x1');
		this.pad = num(svg, 'pad'); this.w = num(svg, 'w');
		this.zoom = svg.querySelector('.zoom');
		var box = svg.viewBox.baseVal;
		this.h = box.height;
		this.cursor = el('line', {'class': 'cursor', y1: 6, y2: this.h - 22, stroke: '#b00020',
			'stroke-width': 1, display: 'none'}, svg);
	}
	// the x a step had as drawn, and the step an x stands for in a view
	Chart.prototype.drawnX = function (s) {
		return this.pad + this.w * (this.x1 > this.x0 ? (s - this.x0) / (this.x1 - this.x0) : 0.5);
	};
	Chart.prototype.viewX = function (s, v) { return this.pad + this.w * (s - v[0]) / (v[1] - v[0]); };
	Chart.prototype.stepAt = function (x, v) { return v[0] + (x - this.pad) * (v[1] - v[0]) / this.w; };
	Chart.prototype.pointerX = function (e) {
		var pt = this.svg.createSVGPoint();
		pt.x = e.clientX; pt.y = e.clientY;
		return pt.matrixTransform(this.svg.getScreenCTM().inverse()).x;
	};
	Chart.prototype.show = function (v) {
		if (!(this.x1 > this.x0)) return;
		var a = (this.x1 - this.x0) / (v[1] - v[0]);
		var b = this.pad - a * this.pad + this.w * (this.x0 - v[0]) / (v[1] - v[0]);
		this.a = a; this.b = b;
		if (this.zoom) this.zoom.setAttribute('transform', 'matrix(' + a + ' 0 0 1 ' + b + ' 0)');
		var self = this;
		[].forEach.call(this.svg.querySelectorAll('.mark[data-step]'), function (m) {
			var s = num(m, 'step'), x = self.viewX(s, v);
			m.setAttribute('transform', 'translate(' + (x - self.drawnX(s)) + ' 0)');
			m.setAttribute('display', x < self.pad - 1 || x > self.pad + self.w + 1 ? 'none' : 'inline');
		});
		var xt = this.svg.querySelector('.xticks');
		if (xt) {
			while (xt.firstChild) xt.removeChild(xt.firstChild);
			ticks(v[0], v[1], 6).forEach(function (t) {
				var x = self.viewX(t, v);
				el('line', {x1: x, x2: x, y1: 10, y2: self.h - 30, stroke: '#eee'}, xt);
				el('text', {x: x, y: self.h - 18}, xt).textContent = stepLabel(t);
			});
			el('text', {x: this.pad + this.w - 14, y: this.h - 18}, xt).textContent = 'step';
		}
		var from = this.svg.querySelector('.v0'), to = this.svg.querySelector('.v1');
		var clamp = function (s) { return Math.min(Math.max(s, self.x0), self.x1); };
		if (from) from.textContent = stepText(clamp(v[0]));
		if (to) to.textContent = stepText(clamp(v[1]));
	};

	// the loss chart's curves and bands, read back from their SVG
	function inverseY(svg) {
		var lo = num(svg, 'lo'), hi = num(svg, 'hi'), log = num(svg, 'log'), top = 10, ph = num(svg, 'ph');
		return function (y) {
			var u = lo + (1 - (y - top) / ph) * (hi - lo);
			return log ? Math.pow(10, u) : u;
		};
	}
	function curve(chart, line, toV) {
		var pts = line.getAttribute('points').trim().split(/\s+/), s = [], v = [];
		pts.forEach(function (p) {
			var xy = p.split(',');
			s.push(chart.x0 + (parseFloat(xy[0]) - chart.pad) * (chart.x1 - chart.x0) / chart.w);
			v.push(toV(parseFloat(xy[1])));
		});
		return {s: s, v: v, name: line.getAttribute('data-name')};
	}
	function nearest(c, step) {
		var lo = 0, hi = c.s.length - 1;
		while (hi - lo > 1) {
			var mid = (lo + hi) >> 1;
			if (c.s[mid] < step) lo = mid; else hi = mid;
		}
		return Math.abs(c.s[lo] - step) <= Math.abs(c.s[hi] - step) ? lo : hi;
	}
	function bands(chart, toV) {
		var out = [];
		[].forEach.call(chart.svg.querySelectorAll('path.band[data-b]'), function (p) {
			var cols = {}, re = /M([\d.]+) ([\d.]+)V([\d.]+)/g, m, cw = chart.w / COLS;
			while ((m = re.exec(p.getAttribute('d'))))
				cols[Math.floor((parseFloat(m[1]) - chart.pad) / cw)] = [toV(parseFloat(m[3])), toV(parseFloat(m[2]))];
			out.push({b: p.getAttribute('data-b'), cols: cols, path: p});
		});
		return out;
	}
	// The zoom's data (data-m4, written by report_charts.c): per column of
	// a grid finer than the chart, each bucket's least and greatest loss as
	// y. A view is drawn anew from it, M4 per pixel column of the steps it
	// shows, so a zoom shows the points a column holds, never the full
	// view's columns spread apart.
	function M4(chart) {
		var raw = atob(chart.svg.getAttribute('data-m4')), cols = num(chart.svg, 'm4-cols');
		var nb = num(chart.svg, 'm4-bands'), ph = num(chart.svg, 'ph'), at = new Uint32Array(cols + 1);
		var cells = (raw.length - cols) / 5, band = new Uint8Array(cells), y = new Float32Array(2 * cells);
		for (var c = 0, j = 0, i = 0; c < cols; c++) {
			var k = raw.charCodeAt(j++);
			at[c] = i;
			for (; k > 0; k--, i++) {
				band[i] = raw.charCodeAt(j);
				y[2 * i] = 10 + ph * (raw.charCodeAt(j + 1) | raw.charCodeAt(j + 2) << 8) / 65535;
				y[2 * i + 1] = 10 + ph * (raw.charCodeAt(j + 3) | raw.charCodeAt(j + 4) << 8) / 65535;
				j += 5;
			}
		}
		at[cols] = i;
		return {cols: cols, nb: nb, at: at, band: band, y: y};
	}
	// Redraws the bands for view v (in the zoom layer's coordinates, whose
	// transform the chart set) and keeps each display column's values for
	// the readout: bs[].cols[d] = [least, greatest].
	function redraw(chart, m4, bs, v, toV) {
		var x0 = chart.x0, span = chart.x1 - chart.x0, per = (v[1] - v[0]) / COLS, d, f, i;
		// per band, the y of the greatest loss (top) and of the least (bottom)
		var top = new Float32Array(m4.nb), bot = new Float32Array(m4.nb), ds = [], byKey = {}, b;
		for (b = 0; b < m4.nb; b++) ds.push([]);
		bs.forEach(function (band) { band.cols = {}; byKey[band.b] = band; });
		for (d = 0; d < COLS; d++) {
			// the fine columns whose steps this pixel column covers
			var ua = (v[0] + d * per - x0) / span * (m4.cols - 1) + 0.5;
			var ub = (v[0] + (d + 1) * per - x0) / span * (m4.cols - 1) + 0.5;
			var fa = Math.max(0, Math.floor(ua)), fb = Math.min(m4.cols - 1, Math.ceil(ub) - 1);
			if (fa > fb) continue;
			top.fill(Infinity); bot.fill(-Infinity);
			for (f = fa; f <= fb; f++)
				for (i = m4.at[f]; i < m4.at[f + 1]; i++) {
					b = m4.band[i];
					top[b] = Math.min(top[b], m4.y[2 * i]);
					bot[b] = Math.max(bot[b], m4.y[2 * i + 1]);
				}
			var x = (chart.pad + chart.w * (d + 0.5) / COLS - chart.b) / chart.a;
			for (b = 0; b < m4.nb; b++) {
				if (top[b] === Infinity) continue;
				var key = String(b === m4.nb - 1 ? -1 : b);
				ds[b].push('M' + x.toFixed(3) + ' ' + top[b].toFixed(1) + 'V' + bot[b].toFixed(1));
				if (byKey[key]) byKey[key].cols[d] = [toV(bot[b]), toV(top[b])];
			}
		}
		for (b = 0; b < m4.nb; b++) {
			var band = byKey[String(b === m4.nb - 1 ? -1 : b)];
			if (band) band.path.setAttribute('d', ds[b].join('') || 'M0 0');
		}
	}
	function rankCells(chart) {
		var rows = [];
		[].forEach.call(chart.svg.querySelectorAll('g.rank'), function (g) {
			var cells = [];
			[].forEach.call(g.querySelectorAll('rect'), function (r) {
				cells.push([parseFloat(r.getAttribute('x')), parseFloat(r.getAttribute('width')), r.getAttribute('data-b')]);
			});
			rows.push({rank: g.getAttribute('data-rank'), cells: cells});
		});
		return rows;
	}

	function setup(sec) {
		var charts = [].map.call(sec.querySelectorAll('svg.chart[data-x0]'), function (s) { return new Chart(s); });
		if (!charts.length) return;
		var main = charts[0], full = [main.x0, main.x1], view = full.slice(), hidden = {}, names = {};
		if (!(full[1] > full[0])) return;
		[].forEach.call(sec.querySelectorAll('button[data-b]'), function (b) {
			names[b.getAttribute('data-b')] = 'bucket ' + b.getAttribute('data-name');
		});
		names['-1'] = 'no single bucket';
		function nameOf(b) { return names[b] || 'bucket ' + b; }
		var lossSvg = sec.querySelector('svg.chart[data-lo]'), loss = null, lines = [], bs = [], ranks = null, m4 = null;
		var toV = null;
		charts.forEach(function (c) {
			if (c.svg === lossSvg) loss = c;
			if (c.svg.classList.contains('ranks')) ranks = c;
		});
		if (loss) {
			toV = inverseY(lossSvg);
			[].forEach.call(lossSvg.querySelectorAll('polyline[data-name]'), function (p) {
				var c = curve(loss, p, toV);
				if (c.s.length) lines.push(c);
			});
			bs = bands(loss, toV);
			if (lossSvg.hasAttribute('data-m4')) m4 = M4(loss);
		}
		var rankRows = ranks ? rankCells(ranks) : [];
		var readout = document.createElement('p');
		readout.className = 'readout';
		readout.setAttribute('aria-live', 'polite');
		readout.textContent = 'Explore: wheel or drag on a chart zooms its steps, double-click resets; ' +
			'point at a chart to read its values; a bucket in the legend hides or shows it. ' +
			'Keys on a focused chart: + - zoom, \u2190 \u2192 pan, 0 resets.';
		var anchor = lossSvg ? lossSvg.nextElementSibling : charts[0].svg;
		anchor.parentNode.insertBefore(readout, anchor.nextSibling);
		if (m4) show();

		function show() {
			charts.forEach(function (c) { c.show(view); });
			if (m4) redraw(loss, m4, bs, view, toV);
		}
		function zoomTo(a, b) {
			var min = Math.max(2, (full[1] - full[0]) / 2000);
			if (b - a < min) { var m = (a + b) / 2; a = m - min / 2; b = m + min / 2; }
			var width = Math.min(b - a, full[1] - full[0]);
			a = Math.max(full[0], Math.min(a, full[1] - width));
			view = [a, a + width];
			show();
		}
		function zoomAround(s, f) { zoomTo(s - (s - view[0]) * f, s + (view[1] - s) * f); }
		function read(step) {
			var parts = ['step ' + stepText(step)];
			lines.forEach(function (c) {
				var i = nearest(c, step);
				if (Math.abs(c.s[i] - step) <= (loss.x1 - loss.x0) / 100) parts.push(c.name + ' ' + fmt(c.v[i]));
			});
			if (bs.length) {
				var seen = [], col = m4 ? Math.floor((step - view[0]) / (view[1] - view[0]) * COLS)
					: Math.floor((step - loss.x0) / (loss.x1 - loss.x0 + 1) * COLS);
				bs.forEach(function (band) {
					var v = band.cols[col];
					if (v && !hidden[band.b])
						seen.push(nameOf(band.b) + ' loss ' +
							(fmt(v[0]) === fmt(v[1]) ? fmt(v[0]) : fmt(v[0]) + '\u2013' + fmt(v[1])));
				});
				parts.push(seen.length ? seen.join(', ') : 'no batch of a shown bucket here');
			}
			if (ranks && step >= ranks.x0 && step <= ranks.x1) {
				var x = ranks.drawnX(step), on = [];
				rankRows.forEach(function (row) {
					row.cells.forEach(function (c) {
						if (x >= c[0] && x < c[0] + c[1] + 0.01 && !hidden[c[2]])
							on.push('rank ' + row.rank + ' ' + nameOf(c[2]));
					});
				});
				if (on.length) parts.push(on.slice(0, 8).join(', ') + (on.length > 8 ? ' \u2026' : ''));
			}
			readout.textContent = parts.join(' \u00b7 ');
			charts.forEach(function (c) {
				var x = c.viewX(step, view);
				c.cursor.setAttribute('x1', x); c.cursor.setAttribute('x2', x);
				c.cursor.setAttribute('display', 'inline');
			});
		}

		charts.forEach(function (c) {
			var svg = c.svg, drag = null, sel = null;
			svg.setAttribute('tabindex', '0');
			svg.addEventListener('wheel', function (e) {
				e.preventDefault();
				zoomAround(c.stepAt(c.pointerX(e), view), e.deltaY > 0 ? 1.25 : 0.8);
			}, {passive: false});
			svg.addEventListener('mousedown', function (e) {
				if (e.button !== 0) return;
				e.preventDefault();
				drag = c.pointerX(e);
				sel = el('rect', {x: drag, y: 10, width: 0, height: c.h - 40, fill: '#0072B2', 'fill-opacity': 0.15}, svg);
			});
			svg.addEventListener('mousemove', function (e) {
				var x = c.pointerX(e);
				if (sel) { sel.setAttribute('x', Math.min(x, drag)); sel.setAttribute('width', Math.abs(x - drag)); }
				if (x >= c.pad && x <= c.pad + c.w) read(c.stepAt(x, view));
			});
			function end(e) {
				if (!sel) return;
				var x = c.pointerX(e), a = c.stepAt(Math.min(x, drag), view), b = c.stepAt(Math.max(x, drag), view);
				svg.removeChild(sel);
				sel = null;
				if (Math.abs(x - drag) > 4) zoomTo(a, b);
			}
			svg.addEventListener('mouseup', end);
			svg.addEventListener('mouseleave', function (e) {
				end(e);
				charts.forEach(function (o) { o.cursor.setAttribute('display', 'none'); });
			});
			svg.addEventListener('dblclick', function () { zoomTo(full[0], full[1]); });
			svg.addEventListener('keydown', function (e) {
				var mid = (view[0] + view[1]) / 2, span = view[1] - view[0];
				if (e.key === '+' || e.key === '=') zoomAround(mid, 0.5);
				else if (e.key === '-') zoomAround(mid, 2);
				else if (e.key === 'ArrowLeft') zoomTo(view[0] - span / 5, view[1] - span / 5);
				else if (e.key === 'ArrowRight') zoomTo(view[0] + span / 5, view[1] + span / 5);
				else if (e.key === '0' || e.key === 'Escape') zoomTo(full[0], full[1]);
				else return;
				e.preventDefault();
				read((view[0] + view[1]) / 2);
			});
		});
		[].forEach.call(sec.querySelectorAll('button[data-b]'), function (btn) {
			btn.addEventListener('click', function () {
				var b = btn.getAttribute('data-b'), off = !hidden[b];
				hidden[b] = off;
				[].forEach.call(sec.querySelectorAll('button[data-b="' + b + '"]'), function (o) {
					o.setAttribute('aria-pressed', off ? 'false' : 'true');
				});
				[].forEach.call(sec.querySelectorAll('svg [data-b="' + b + '"]'), function (m) {
					m.setAttribute('display', off ? 'none' : 'inline');
				});
			});
		});
	}
	[].forEach.call(document.querySelectorAll('section.run, section.overlay'), setup);
})();

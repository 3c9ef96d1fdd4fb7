/* tlsan view: draws the plans embedded in the page (embedded into the HTML by the build).
 *
 * The data (view.c, gen_plan_json) holds per plan the ops, arenas, branch paths and the
 * tensors column by column, with lifetimes already derived by the checker's own code: this
 * script only lays them out. Nothing is fetched; the page works from a file:// URL.
 *
 * An arena with few tensors is drawn as SVG elements (inspectable, and what the browser
 * test reads back); a large one on a canvas, where rectangles smaller than a couple of
 * pixels are binned into a density grid so that 10^5 roots draw in milliseconds and stay
 * readable. Tensors named by a pair finding are never binned: they stay visible, in red. */
(function () {
  'use strict';
  var T0 = performance.now();
  var SVG_LIMIT = 4000;   /* tensors in an arena drawn as SVG elements; more: canvas */
  var TINY = 2;           /* px^2: smaller rectangles are binned */
  var BIN = 3;            /* px: side of a density bin */
  var M = {l: 78, r: 10, t: 8, b: 22};  /* margins of the main chart */
  var LIVE_H = 120;
  var C = {
    root: '#9ecae1', rootStroke: '#3b75a8', view: '#c6e6c0', viewStroke: '#3a8a3a',
    conflict: '#d62728', conflictStroke: '#7a0000', flagged: '#fdae6b', flaggedStroke: '#c05800',
    collision: 'rgba(60,0,0,0.8)', bin: '80,110,150', grid: '#eee', axis: '#888',
    live: '#1f5fa8', size: '#333', bound: '#c05800'
  };

  var data = JSON.parse(document.getElementById('tlsan-data').textContent);
  var mainEl = document.getElementById('tlsan-main');
  var tip = document.getElementById('tlsan-tip');
  var result = {plans: []};

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c];
    });
  }
  function fmtBytes(b) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i ? (b >= 100 ? b.toFixed(0) : b >= 10 ? b.toFixed(1) : b.toFixed(2)) : b) + ' ' + u[i];
  }
  /* Tick positions: a round step giving about `want` ticks over [lo, hi]. */
  function ticks(lo, hi, want, integer, binary) {
    var span = hi - lo;
    if (!(span > 0)) return [lo];
    var raw = span / want, step;
    if (binary && raw >= 1) {
      step = Math.pow(2, Math.ceil(Math.log2(raw)));
    } else {
      var p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
      step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
    }
    if (integer) step = Math.max(1, Math.round(step));
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi && out.length < 200; v += step) out.push(v);
    return out;
  }

  /* ---- drawing backends: the same calls produce SVG markup or canvas pixels ---- */
  function SvgOut(w, h) {
    this.parts = ['<svg width="' + w + '" height="' + h + '" viewBox="0 0 ' + w + ' ' + h + '">'];
  }
  SvgOut.prototype.rect = function (x, y, w, h, fill, stroke, attrs) {
    this.parts.push('<rect x="' + x.toFixed(1) + '" y="' + y.toFixed(1) + '" width="' +
                    Math.max(w, 0).toFixed(1) + '" height="' + Math.max(h, 0).toFixed(1) +
                    '" fill="' + fill + '"' + (stroke ? ' stroke="' + stroke + '"' : '') +
                    (attrs || '') + '/>');
  };
  SvgOut.prototype.line = function (x1, y1, x2, y2, stroke, dash) {
    this.parts.push('<line x1="' + x1 + '" y1="' + y1 + '" x2="' + x2 + '" y2="' + y2 +
                    '" stroke="' + stroke + '"' + (dash ? ' stroke-dasharray="4 3"' : '') + '/>');
  };
  SvgOut.prototype.text = function (x, y, s, anchor, cls) {
    this.parts.push('<text x="' + x + '" y="' + y + '" text-anchor="' + (anchor || 'start') +
                    '" class="' + (cls || 'axis') + '">' + esc(s) + '</text>');
  };
  SvgOut.prototype.poly = function (pts, stroke) {
    var s = [];
    for (var i = 0; i < pts.length; i += 2) s.push(pts[i].toFixed(1) + ',' + pts[i + 1].toFixed(1));
    this.parts.push('<polyline fill="none" stroke="' + stroke + '" points="' + s.join(' ') + '"/>');
  };
  /* Collisions: diagonal hatching, so the red tensors under them stay visible. */
  SvgOut.prototype.hatch = function (x, y, w, h, attrs) {
    if (!this.defs) {
      this.defs = 'h' + (SvgOut.count = (SvgOut.count || 0) + 1);
      this.parts.push('<defs><pattern id="' + this.defs + '" width="6" height="6" ' +
                      'patternUnits="userSpaceOnUse" patternTransform="rotate(45)">' +
                      '<rect width="2.5" height="6" fill="' + C.collision + '"/></pattern></defs>');
    }
    this.rect(x, y, w, h, 'url(#' + this.defs + ')', C.conflictStroke, attrs + ' stroke-width="2"');
  };
  SvgOut.prototype.finish = function (host) {
    this.parts.push('</svg>');
    /* Markup through innerHTML: the HTML parser puts it in the SVG namespace by itself. */
    host.innerHTML = this.parts.join('');
  };

  function CanvasOut(canvas, w, h) {
    var dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
    canvas.style.width = w + 'px';
    canvas.style.height = h + 'px';
    this.g = canvas.getContext('2d');
    this.g.setTransform(dpr, 0, 0, dpr, 0, 0);
    this.g.clearRect(0, 0, w, h);
    this.g.font = '10px ui-monospace, monospace';
  }
  CanvasOut.prototype.rect = function (x, y, w, h, fill, stroke) {
    var g = this.g;
    g.fillStyle = fill;
    g.fillRect(x, y, w, h);
    if (stroke && w > 3 && h > 3) {
      g.strokeStyle = stroke;
      g.strokeRect(x + 0.5, y + 0.5, w - 1, h - 1);
    }
  };
  CanvasOut.prototype.hatch = function (x, y, w, h) {
    var g = this.g;
    if (!CanvasOut.pattern) {
      var c = document.createElement('canvas');
      c.width = c.height = 6;
      var cg = c.getContext('2d');
      cg.strokeStyle = C.collision;
      cg.lineWidth = 2.5;
      cg.beginPath(); cg.moveTo(-1, 7); cg.lineTo(7, -1); cg.stroke();
      CanvasOut.pattern = g.createPattern(c, 'repeat');
    }
    g.fillStyle = CanvasOut.pattern;
    g.fillRect(x, y, w, h);
    g.lineWidth = 2;
    g.strokeStyle = C.conflictStroke;
    g.strokeRect(x, y, w, h);
    g.lineWidth = 1;
  };
  CanvasOut.prototype.line = function (x1, y1, x2, y2, stroke, dash) {
    var g = this.g;
    g.strokeStyle = stroke;
    g.setLineDash(dash ? [4, 3] : []);
    g.beginPath(); g.moveTo(x1, y1); g.lineTo(x2, y2); g.stroke();
    g.setLineDash([]);
  };
  CanvasOut.prototype.text = function (x, y, s, anchor) {
    this.g.fillStyle = '#555';
    this.g.textAlign = anchor === 'end' ? 'right' : anchor === 'middle' ? 'center' : 'left';
    this.g.fillText(s, x, y);
  };
  CanvasOut.prototype.poly = function (pts, stroke) {
    var g = this.g;
    g.strokeStyle = stroke;
    g.beginPath();
    for (var i = 0; i < pts.length; i += 2) (i ? g.lineTo : g.moveTo).call(g, pts[i], pts[i + 1]);
    g.stroke();
  };
  CanvasOut.prototype.finish = function () {};

  /* ---- one plan ---- */
  function Plan(P, index) {
    var self = this;
    this.P = P;
    this.T = P.tensors;
    this.nT = this.T.name.length;
    this.nOps = P.ops.length;
    this.path = -1;
    this.depIndex = {};
    P.dep.forEach(function (t, d) { self.depIndex[t] = d; });
    this.lives = Int32Array.from(this.T.life);
    this.findingsOf = {};  /* tensor -> findings naming it */
    P.findings.forEach(function (f, i) {
      f.index = i;
      f.tensors.forEach(function (t) {
        if (t >= 0) (self.findingsOf[t] = self.findingsOf[t] || []).push(f);
      });
    });

    var sec = el('section', 'plan');
    sec.id = 'plan-' + index;
    sec.appendChild(el('h2', null, P.label + (P.name && P.label.indexOf(P.name) < 0 ? ' (' + P.name + ')' : '')));
    var nRoots = 0;
    for (var t = 0; t < this.nT; t++) if (this.T.base[t] < 0) nRoots++;
    var sum = el('p', 'summary', this.nOps + ' ops, ' + nRoots + ' storage roots, ' +
                 (this.nT - nRoots) + ' views, ' + P.arenas.length + ' arena' +
                 (P.arenas.length === 1 ? '' : 's') + ', schedule ' + P.schedule + '. ');
    var nf = el('span', P.findings.length ? 'bad' : null,
                P.findings.length ? P.findings.length + ' finding' + (P.findings.length === 1 ? '' : 's') :
                'no findings');
    sum.appendChild(nf);
    sec.appendChild(sum);
    var leg = el('p', 'legend');
    leg.innerHTML = '<i style="background:' + C.root + '"></i>storage root <i style="background:' +
      C.view + '"></i>view <i style="background:' + C.conflict + '"></i>shares bytes while live ' +
      '(finding) <i style="background:' + C.flagged + '"></i>other finding ' +
      '<i class="hatch"></i>collision: where and when <i style="background:rgba(' + C.bin +
      ',0.6)"></i>many small tensors (binned)';
    sec.appendChild(leg);
    if (P.ifs.length) sec.appendChild(this.pathSelector());
    this.panels = [];
    var orphan = P.findings.filter(function (f) {
      return !f.tensors.some(function (t) { return t >= 0; });
    });
    if (orphan.length) sec.appendChild(findingList(orphan, 'Findings of the plan', null));
    mainEl.appendChild(sec);
    for (var a = 0; a < P.arenas.length; a++) this.panels.push(new Panel(this, a, sec));
    result.plans.push({label: P.label, arenas: this.panels.map(function (p) { return p.stats; })});
  }
  Plan.prototype.pathSelector = function () {
    var self = this, P = this.P;
    var box = el('div', 'paths');
    box.appendChild(el('label', null, 'Branch path: '));
    var sel = el('select');
    sel.className = 'path-select';
    var all = el('option', null, P.paths.length ? 'all ' + P.paths.length + ' paths (union of lifetimes)' :
                 P.paths_total + ' paths: too many to list, the union of lifetimes is shown');
    all.value = '-1';
    sel.appendChild(all);
    P.paths.forEach(function (arms, k) {
      var o = el('option', null, arms.map(function (a, f) {
        return P.ifs[f].name + '=' + P.ifs[f].arms[a];
      }).join(', '));
      o.value = String(k);
      sel.appendChild(o);
    });
    sel.disabled = !P.paths.length;
    sel.addEventListener('change', function () { self.setPath(+sel.value); });
    box.appendChild(sel);
    return box;
  };
  Plan.prototype.setPath = function (k) {
    this.path = k;
    this.lives = Int32Array.from(this.T.life);
    if (k >= 0 && this.P.path_life.length) {
      var pl = this.P.path_life[k], dep = this.P.dep;
      for (var d = 0; d < dep.length; d++) {
        this.lives[2 * dep[d]] = pl[2 * d];
        this.lives[2 * dep[d] + 1] = pl[2 * d + 1];
      }
    }
    this.panels.forEach(function (p) { p.computeLive(); p.draw(); });
  };
  /* Whether a finding holds on the selected path (its path names only the ifs it needs). */
  Plan.prototype.onPath = function (f) {
    if (this.path < 0 || !f.path) return true;
    var arms = this.P.paths[this.path], ifs = this.P.ifs;
    for (var f2 = 0; f2 < ifs.length; f2++)
      if (f.path.hasOwnProperty(ifs[f2].name) && ifs[f2].arms[arms[f2]] !== f.path[ifs[f2].name])
        return false;
    return true;
  };
  Plan.prototype.opLabel = function (s) {
    if (s < 0) return 'step -1 (inputs are written)';
    if (s >= this.nOps) return 'step ' + this.nOps + ' (outputs are read)';
    var st = this.P.op_stream[s];
    return 'step ' + s + ': ' + this.P.ops[s] + (st && st !== 'main' ? ' [stream ' + st + ']' : '');
  };

  function findingList(fs, title, panel) {
    var box = el('div');
    box.appendChild(el('h4', null, title));
    if (!fs.length) {
      box.appendChild(el('div', 'none', 'none'));
      return box;
    }
    var ol = el('ol');
    fs.forEach(function (f) {
      var li = el('li');
      li.className = 'finding';
      li.dataset.kind = f.kind;
      li.dataset.tensors = f.names.join(' ');
      var k = el('span', 'kind' + (f.pair ? '' : ' warn'), f.kind);
      li.appendChild(k);
      li.appendChild(document.createTextNode(' ' + f.names.join(' / ') +
        (f.steps ? ', steps ' + f.steps[0] + '..' + f.steps[1] : '') +
        (f.bytes ? ', bytes [' + f.bytes[0] + ', ' + f.bytes[1] + ')' : '') +
        (f.path ? ', path ' + Object.keys(f.path).map(function (i) { return i + '=' + f.path[i]; }).join(' ') : '') +
        (f.approximate ? ' (approximate)' : '')));
      li.title = f.message;
      if (panel) li.addEventListener('click', function () { panel.focus(f); });
      ol.appendChild(li);
    });
    box.appendChild(ol);
    return box;
  }

  /* ---- one arena: the chart, its live-bytes chart and the findings beside them ---- */
  function Panel(plan, a, sec) {
    var self = this, P = plan.P, T = plan.T;
    this.plan = plan;
    this.a = a;
    this.arena = P.arenas[a];
    this.roots = [];
    this.views = [];
    var used = 0;
    for (var t = 0; t < plan.nT; t++) {
      if (T.arena[t] !== a) continue;
      (T.base[t] < 0 ? this.roots : this.views).push(t);
      if (T.offset[t] + T.bytes[t] > used) used = T.offset[t] + T.bytes[t];
    }
    /* Bytes shown: those used, and the arena's end when it is near (an arena much larger
     * than its tensors would squeeze them into a thin strip). */
    this.yMax = Math.max(1, used, this.arena.bytes <= 1.25 * used ? this.arena.bytes : 0);
    this.svgMode = this.roots.length + this.views.length <= SVG_LIMIT;
    this.findings = P.findings.filter(function (f) {
      return f.tensors.some(function (t) { return t >= 0 && T.arena[t] === a; });
    });
    this.reset();

    var box = el('div', 'arena');
    box.id = 'arena-' + sec.id.slice(5) + '-' + a;
    box.dataset.arena = this.arena.name;
    var charts = el('div', 'charts');
    charts.appendChild(el('h3', null, 'arena ' + this.arena.name + ' (' + fmtBytes(this.arena.bytes) +
      ', ' + this.arena.memory + '): ' + this.roots.length + ' roots, ' + this.views.length + ' views'));
    this.host = el('div', 'chart');
    this.host.dataset.mode = this.svgMode ? 'svg' : 'canvas';
    if (!this.svgMode) this.canvas = this.host.appendChild(el('canvas'));
    charts.appendChild(this.host);
    this.liveHost = el('div', 'live');
    charts.appendChild(this.liveHost);
    box.appendChild(charts);
    var aside = el('aside');
    aside.appendChild(findingList(this.findings, 'Findings in this arena (' + this.findings.length + ')', this));
    box.appendChild(aside);
    sec.appendChild(box);
    this.stats = {arena: this.arena.name, mode: this.host.dataset.mode};
    this.width = Math.max(300, this.host.clientWidth || 900);
    this.height = Math.max(220, Math.min(520, 140 + 22 * Math.min(this.roots.length, 16)));
    this.bindEvents();
    this.computeLive();
    this.draw();
  }
  Panel.prototype.reset = function () {
    this.x0 = -1;
    this.x1 = this.plan.nOps + 1;
    this.y0 = 0;
    this.y1 = this.yMax;
  };
  /* Live root bytes of each step from -1 to n_ops on the selected path. */
  Panel.prototype.computeLive = function () {
    var n = this.plan.nOps + 2;
    if (this.plan.path < 0 && this.plan.P.ifs.length) {
      /* All paths: the most live bytes of each step over the paths, from the checker. */
      this.live = Float64Array.from(this.arena.live_max);
      this.liveMax = this.live.reduce(function (m, v) { return v > m ? v : m; }, 0);
      return;
    }
    var diff = new Float64Array(n + 1), L = this.plan.lives, T = this.plan.T;
    for (var i = 0; i < this.roots.length; i++) {
      var t = this.roots[i], f = L[2 * t], l = L[2 * t + 1];
      if (f > l) continue;
      diff[f + 1] += T.bytes[t];
      diff[l + 2] -= T.bytes[t];
    }
    var live = new Float64Array(n), cur = 0, max = 0;
    for (var s = 0; s < n; s++) { cur += diff[s]; live[s] = cur; if (cur > max) max = cur; }
    this.live = live;
    this.liveMax = max;
  };
  Panel.prototype.sx = function () { return (this.width - M.l - M.r) / (this.x1 - this.x0); };
  Panel.prototype.sy = function () { return (this.height - M.t - M.b) / (this.y1 - this.y0); };

  Panel.prototype.draw = function () {
    var t0 = performance.now();
    var plan = this.plan, T = plan.T, L = plan.lives, w = this.width, h = this.height;
    var out = this.svgMode ? new SvgOut(w, h) : new CanvasOut(this.canvas, w, h);
    var sx = this.sx(), sy = this.sy(), x0 = this.x0, y0 = this.y0;
    var cw = w - M.l - M.r, ch = h - M.t - M.b;
    /* Grid and axes. */
    var xt = ticks(Math.max(this.x0, -1), Math.min(this.x1, plan.nOps + 1), Math.max(2, cw / 70), true);
    var xstep = xt.length > 1 ? xt[1] - xt[0] : 1;
    xt.forEach(function (s) {
      var x = M.l + (s + 0.5 - x0) * sx;
      if (x < M.l || x > w - M.r) return;
      out.line(x, M.t, x, h - M.b, C.grid);
      /* Op names under the steps when there is room for them. */
      var name = s >= 0 && s < plan.nOps ? plan.P.ops[s] : '';
      out.text(x, h - 8, name && sx * xstep > 7 * (name.length + 4) ? s + ' ' + name : String(s), 'middle');
    });
    var yt = ticks(this.y0, this.y1, Math.max(2, ch / 40), true, true);
    yt.forEach(function (b) {
      var y = M.t + (b - y0) * sy;
      out.line(M.l, y, w - M.r, y, C.grid);
      out.text(M.l - 4, y + 3, fmtBytes(b), 'end');
    });
    var ya = M.t + (this.arena.bytes - y0) * sy;
    if (ya >= M.t && ya <= h - M.b) {
      out.line(M.l, ya, w - M.r, ya, C.size, true);
      out.text(w - M.r - 2, ya - 3, 'arena end ' + fmtBytes(this.arena.bytes), 'end');
    }
    /* Rectangles: roots, then views inside them, then collisions on top. */
    var bins = null, binsW = Math.ceil(cw / BIN), binsH = Math.ceil(ch / BIN);
    var drawn = 0, binned = 0, conflicts = [], labels = [];
    var self = this;
    function place(t, isView) {
      var f = L[2 * t], l = L[2 * t + 1];
      if (f > l) return;
      var x = M.l + (f - x0) * sx, rw = (l + 1 - f) * sx;
      var y = M.t + (T.offset[t] - y0) * sy, rh = T.bytes[t] * sy;
      if (x + rw < M.l || x > w - M.r || y + rh < M.t || y > h - M.b) return;
      var mark = T.mark[t];
      /* Clip to the plot so that zoomed rectangles do not cover the axes. */
      var cx = Math.max(x, M.l), cy = Math.max(y, M.t);
      rw = Math.min(x + rw, w - M.r) - cx;
      rh = Math.min(y + rh, h - M.b) - cy;
      x = cx; y = cy;
      if (mark === 2) {
        /* Conflicts stay visible at any zoom. */
        if (rw < 3) { x -= (3 - rw) / 2; rw = 3; }
        if (rh < 3) { y -= (3 - rh) / 2; rh = 3; }
        conflicts.push(T.name[t]);
      } else if (rw * rh < TINY) {
        if (!bins) bins = new Uint32Array(binsW * binsH);
        var bx = Math.min(binsW - 1, Math.max(0, Math.floor((x - M.l) / BIN)));
        var by = Math.min(binsH - 1, Math.max(0, Math.floor((y - M.t) / BIN)));
        bins[by * binsW + bx]++;
        binned++;
        return;
      }
      var fill = mark === 2 ? C.conflict : mark === 1 ? C.flagged : isView ? C.view : C.root;
      var stroke = mark === 2 ? C.conflictStroke : mark === 1 ? C.flaggedStroke :
                   isView ? C.viewStroke : C.rootStroke;
      var attrs = self.svgMode ? ' class="' + (isView ? 'view' : 'root') + (mark === 2 ? ' conflict' : '') +
        (mark === 1 ? ' flagged' : '') + '" data-t="' + t + '" data-name="' + esc(T.name[t]) +
        '" data-life="' + f + ' ' + l + '"' + (isView ? ' fill-opacity="0.85" stroke-dasharray="3 2"' : '') : '';
      out.rect(x, y, rw, rh, fill, stroke, attrs);
      drawn++;
      /* The name, where it fits. */
      if (rw > 8 * Math.min(T.name[t].length, 24) && rh > 12)
        labels.push([x + 3, y + Math.min(rh - 3, 12),
                     T.name[t].length > 24 ? T.name[t].slice(0, 23) + '…' : T.name[t]]);
    }
    var i;
    for (i = 0; i < this.roots.length; i++) if (T.mark[this.roots[i]] !== 2) place(this.roots[i], false);
    if (bins) {
      for (var b = 0; b < bins.length; b++) {
        if (!bins[b]) continue;
        var alpha = Math.min(0.9, 0.25 + 0.1 * Math.log2(1 + bins[b]));
        out.rect(M.l + (b % binsW) * BIN, M.t + Math.floor(b / binsW) * BIN, BIN, BIN,
                 'rgba(' + C.bin + ',' + alpha.toFixed(2) + ')', null, this.svgMode ? ' class="bin"' : '');
      }
    }
    /* Conflicting roots before views, so that the views inside them stay visible. */
    for (i = 0; i < this.roots.length; i++) if (T.mark[this.roots[i]] === 2) place(this.roots[i], false);
    for (i = 0; i < this.views.length; i++) if (T.mark[this.views[i]] !== 2) place(this.views[i], true);
    for (i = 0; i < this.views.length; i++) if (T.mark[this.views[i]] === 2) place(this.views[i], true);
    var collisions = 0;
    this.findings.forEach(function (fd) {
      if (!fd.pair || !fd.steps || !fd.bytes || !plan.onPath(fd)) return;
      var x = M.l + (fd.steps[0] - x0) * sx, rw = (fd.steps[1] + 1 - fd.steps[0]) * sx;
      var y = M.t + (fd.bytes[0] - y0) * sy, rh = (fd.bytes[1] - fd.bytes[0]) * sy;
      if (x + rw < M.l || x > w - M.r || y + rh < M.t || y > h - M.b) return;
      out.hatch(x, y, Math.max(rw, 3), Math.max(rh, 3),
                self.svgMode ? ' class="collision" data-kind="' + fd.kind + '" data-tensors="' +
                esc(fd.names.join(' ')) + '"' : '');
      collisions++;
    });
    labels.forEach(function (lb) { out.text(lb[0], lb[1], lb[2], 'start', 'label'); });
    out.line(M.l, h - M.b, w - M.r, h - M.b, C.axis);
    out.line(M.l, M.t, M.l, h - M.b, C.axis);
    out.finish(this.host);
    this.drawLive();
    this.stats.drawn = drawn;
    this.stats.binned = binned;
    this.stats.conflicts = conflicts;
    this.stats.collisions = collisions;
    this.stats.ms = +(performance.now() - t0).toFixed(1);
  };

  /* Live bytes per step under the chart, on the same step axis, with the arena's size and
   * the checker's lower bound (the most live bytes at one step on any path) as lines. */
  Panel.prototype.drawLive = function () {
    var w = this.width, h = LIVE_H, plan = this.plan, x0 = this.x0, sx = this.sx();
    var out = new SvgOut(w, h);
    var top = Math.max(this.arena.bytes, this.arena.lower_bound, this.liveMax, 1) * 1.08;
    var mt = 14, mb = 16, sy = (h - mt - mb) / top;
    function Y(v) { return h - mb - v * sy; }
    ticks(0, top, 3, true, true).forEach(function (b) {
      out.line(M.l, Y(b), w - M.r, Y(b), C.grid);
      out.text(M.l - 4, Y(b) + 3, fmtBytes(b), 'end');
    });
    /* One point per pixel column: the most live bytes of the steps under it. */
    var pts = [], live = this.live, n = live.length;
    for (var px = M.l; px < w - M.r; px++) {
      var sa = Math.floor(x0 + (px - M.l) / sx), sb = Math.floor(x0 + (px + 1 - M.l) / sx);
      sa = Math.max(sa, -1);
      sb = Math.min(Math.max(sb, sa), n - 2);
      if (sa > n - 2) break;
      var v = 0;
      for (var s = sa; s <= sb; s++) if (live[s + 1] > v) v = live[s + 1];
      pts.push(px, Y(v));
    }
    if (pts.length) out.poly(pts, C.live);
    out.line(M.l, Y(this.arena.bytes), w - M.r, Y(this.arena.bytes), C.size, true);
    out.text(w - M.r - 2, Y(this.arena.bytes) - 3, 'arena size ' + fmtBytes(this.arena.bytes), 'end');
    out.line(M.l, Y(this.arena.lower_bound), w - M.r, Y(this.arena.lower_bound), C.bound, true);
    out.text(M.l + 4, Y(this.arena.lower_bound) - 3, 'lower bound ' + fmtBytes(this.arena.lower_bound) +
             (this.arena.lower_bound_approximate ? ' (approximate)' : '') + '; live bytes: peak ' +
             fmtBytes(this.liveMax) + (plan.path >= 0 || !plan.P.ifs.length ? '' :
             plan.P.paths.length ? ' (the most over the paths)' : ' (union of lifetimes: an upper bound)'),
             'start');
    out.line(M.l, h - mb, w - M.r, h - mb, C.axis);
    out.finish(this.liveHost);
  };

  /* The tensor under a point: the smallest one drawn there (views sit inside roots). */
  Panel.prototype.hit = function (step, byte) {
    var T = this.plan.T, L = this.plan.lives, best = -1, bestBytes = Infinity;
    var lists = [this.views, this.roots];
    for (var k = 0; k < 2; k++) {
      var list = lists[k];
      for (var i = 0; i < list.length; i++) {
        var t = list[i];
        if (L[2 * t] > step || L[2 * t + 1] < step) continue;
        if (byte < T.offset[t] || byte >= T.offset[t] + T.bytes[t]) continue;
        if (T.bytes[t] < bestBytes) { best = t; bestBytes = T.bytes[t]; }
      }
    }
    /* Tiny tensors are hard to hit exactly: accept the nearest within a few pixels. */
    if (best < 0) {
      var tol = 4 / this.sy();
      for (i = 0; i < this.roots.length; i++) {
        t = this.roots[i];
        if (L[2 * t] > step || L[2 * t + 1] < step) continue;
        if (byte >= T.offset[t] - tol && byte < T.offset[t] + T.bytes[t] + tol) return t;
      }
    }
    return best;
  };
  Panel.prototype.describe = function (t, step) {
    var plan = this.plan, P = plan.P, T = plan.T, L = plan.lives, lines = [];
    lines.push(plan.opLabel(step));
    if (t < 0) return lines.join('\n');
    lines.push('');
    lines.push((T.base[t] < 0 ? 'storage root ' : 'view ') + T.name[t] +
               (T.base[t] >= 0 ? ' (of ' + T.name[T.base[t]] + ', root ' + T.name[T.root[t]] + ')' : '') +
               (T.flags[t] & 1 ? ' [input]' : '') + (T.flags[t] & 2 ? ' [output]' : ''));
    lines.push('bytes    ' + T.bytes[t] + ' (' + fmtBytes(T.bytes[t]) + ') at offset ' + T.offset[t] +
               ' .. ' + (T.offset[t] + T.bytes[t]) + ' in arena ' + this.arena.name);
    var f = L[2 * t], l = L[2 * t + 1];
    lines.push('lifetime ' + (f > l ? 'not live on this path' : '[' + f + ', ' + l + ']' +
               (f >= 0 && f < plan.nOps ? ' from ' + P.ops[f] : '') +
               (l >= 0 && l < plan.nOps ? ' to ' + P.ops[l] : '')) +
               (plan.path < 0 && P.dep.length && plan.depIndex[t] !== undefined ? ' (union of paths)' : ''));
    if (T.declared[t]) lines.push('declared [' + T.declared[t][0] + ', ' + T.declared[t][1] + ']');
    if (T.dtype[t]) lines.push('dtype    ' + T.dtype[t] + ' shape [' + (T.shape[t] || []).join(', ') + ']');
    var reads = [], writes = [];
    T.access[t].forEach(function (v) {
      var op = Math.floor(v / 4);
      if (v & 1) reads.push(P.ops[op] + '@' + op);
      if (v & 2) writes.push(P.ops[op] + '@' + op);
    });
    function list(a) { return a.length > 12 ? a.slice(0, 12).join(' ') + ' … (' + a.length + ')' : a.join(' ') || '-'; }
    lines.push('written  ' + list(writes));
    lines.push('read     ' + list(reads));
    (plan.findingsOf[t] || []).forEach(function (fd) { lines.push('FINDING  ' + fd.kind + ': ' + fd.message); });
    if (T.stack[t]) {
      lines.push('stack');
      T.stack[t].slice(0, 12).forEach(function (fr, i) { lines.push('  #' + i + ' ' + fr); });
    }
    return lines.join('\n');
  };
  Panel.prototype.toData = function (ev) {
    var r = this.host.getBoundingClientRect();
    var px = ev.clientX - r.left, py = ev.clientY - r.top;
    return {px: px, py: py, step: this.x0 + (px - M.l) / this.sx(), byte: this.y0 + (py - M.t) / this.sy()};
  };
  Panel.prototype.zoomTo = function (x0, x1, y0, y1) {
    var minX = 2, minY = 16;
    if (x1 - x0 < minX) { var cx = (x0 + x1) / 2; x0 = cx - minX / 2; x1 = cx + minX / 2; }
    if (y1 - y0 < minY) { var cy = (y0 + y1) / 2; y0 = cy - minY / 2; y1 = cy + minY / 2; }
    var spanX = this.plan.nOps + 2, spanY = this.yMax;
    if (x1 - x0 > spanX) { x0 = -1; x1 = this.plan.nOps + 1; }
    if (y1 - y0 > spanY) { y0 = 0; y1 = this.yMax; }
    if (x0 < -1) { x1 += -1 - x0; x0 = -1; }
    if (x1 > this.plan.nOps + 1) { x0 -= x1 - this.plan.nOps - 1; x1 = this.plan.nOps + 1; }
    if (y0 < 0) { y1 -= y0; y0 = 0; }
    if (y1 > this.yMax) { y0 -= y1 - this.yMax; y1 = this.yMax; }
    this.x0 = x0; this.x1 = x1; this.y0 = y0; this.y1 = y1;
    this.schedule();
  };
  Panel.prototype.schedule = function () {
    var self = this;
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(function () { self.pending = false; self.draw(); });
  };
  /* Shows a finding's collision with some room around it. */
  Panel.prototype.focus = function (f) {
    if (!f.steps || !f.bytes) return;
    var dx = Math.max(2, (f.steps[1] - f.steps[0] + 1)), dy = Math.max(64, f.bytes[1] - f.bytes[0]);
    this.zoomTo(f.steps[0] - dx, f.steps[1] + 1 + dx, f.bytes[0] - dy, f.bytes[1] + dy);
    this.host.scrollIntoView({block: 'nearest'});
  };
  Panel.prototype.bindEvents = function () {
    var self = this, host = this.host, drag = null;
    host.addEventListener('wheel', function (ev) {
      ev.preventDefault();
      var d = self.toData(ev), k = ev.deltaY > 0 ? 1.25 : 0.8;
      var zx = !ev.shiftKey, zy = !ev.ctrlKey;
      self.zoomTo(zx ? d.step - (d.step - self.x0) * k : self.x0, zx ? d.step + (self.x1 - d.step) * k : self.x1,
                  zy ? d.byte - (d.byte - self.y0) * k : self.y0, zy ? d.byte + (self.y1 - d.byte) * k : self.y1);
    }, {passive: false});
    host.addEventListener('mousedown', function (ev) {
      drag = {x: ev.clientX, y: ev.clientY, x0: self.x0, x1: self.x1, y0: self.y0, y1: self.y1};
      host.classList.add('dragging');
      ev.preventDefault();
    });
    window.addEventListener('mouseup', function () { drag = null; host.classList.remove('dragging'); });
    window.addEventListener('mousemove', function (ev) {
      if (!drag) return;
      var dx = (ev.clientX - drag.x) / self.sx(), dy = (ev.clientY - drag.y) / self.sy();
      self.zoomTo(drag.x0 - dx, drag.x1 - dx, drag.y0 - dy, drag.y1 - dy);
    });
    host.addEventListener('dblclick', function () { self.reset(); self.schedule(); });
    host.addEventListener('mousemove', function (ev) {
      if (drag) { tip.hidden = true; return; }
      var d = self.toData(ev);
      if (d.px < M.l || d.px > self.width - M.r || d.py < M.t) { tip.hidden = true; return; }
      var step = Math.floor(d.step);
      var t = d.py > self.height - M.b ? -1 : self.hit(step, d.byte);
      tip.textContent = self.describe(t, step);
      tip.hidden = false;
      var x = ev.clientX + 14, y = ev.clientY + 14;
      if (x + tip.offsetWidth > window.innerWidth) x = ev.clientX - tip.offsetWidth - 8;
      if (y + tip.offsetHeight > window.innerHeight) y = Math.max(0, ev.clientY - tip.offsetHeight - 8);
      tip.style.left = x + 'px';
      tip.style.top = y + 'px';
    });
    host.addEventListener('mouseleave', function () { tip.hidden = true; });
    window.addEventListener('resize', function () {
      var w = Math.max(300, host.clientWidth || 900);
      if (w !== self.width) { self.width = w; self.schedule(); }
    });
  };

  var plans = data.plans.map(function (P, i) { return new Plan(P, i); });
  /* "#path=K" in the address selects path K of every plan that has it (links, tests). */
  var want = /(?:^#|&)path=(\d+)/.exec(location.hash);
  if (want) {
    plans.forEach(function (pl) {
      var k = +want[1];
      if (k >= pl.P.paths.length) return;
      var sel = document.querySelector('#plan-' + plans.indexOf(pl) + ' .path-select');
      if (sel) sel.value = String(k);
      pl.setPath(k);
    });
  }
  plans.forEach(function (pl, i) { result.plans[i].path = pl.path; });
  /* What was drawn, for tests and timing (tests/cli/view.sh reads it from the DOM). */
  result.ms = +(performance.now() - T0).toFixed(1);
  result.since_navigation_ms = +performance.now().toFixed(1);
  var res = el('pre', null, JSON.stringify(result));
  res.id = 'tlsan-result';
  res.hidden = true;
  document.body.appendChild(res);
  document.body.dataset.tlsanReady = '1';
})();

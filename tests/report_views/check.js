// Runs inside the report (a copy with this script appended) in headless
// Chromium; appends what it found as JSON in a pre element, id dom-check.
(function () {
  const out = { charts: 0, marks: 0, open: 0, overlaps: [], negative_ticks: [], outside: [], raw: [] };
  const box = (e) => e.getBoundingClientRect();
  const visible = (e) => {
    const c = e.cloneNode(true);
    c.querySelectorAll('title,desc').forEach((t) => t.remove());
    return c.textContent.trim();
  };
  const meets = (a, b) =>
    Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 &&
    Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5;
  for (const svg of document.querySelectorAll('svg.chart')) {
    out.charts++;
    const texts = [...svg.querySelectorAll('text')].filter((t) => visible(t) !== '');
    const boxes = texts.map(box);
    for (let i = 0; i < texts.length; i++)
      for (let j = i + 1; j < texts.length; j++)
        if (meets(boxes[i], boxes[j]))
          out.overlaps.push(svg.id + ': "' + visible(texts[i]) + '" overlaps "' + visible(texts[j]) + '"');
    // Only a change (B against A, a difference) may go below 0.
    const signed = /change|cmp-profile/.test(svg.id);
    if (!signed)
      for (const t of svg.querySelectorAll('text.yt, text.xt'))
        if (/^[-−]\s*\d/.test(visible(t)) && !/^[-−]0+(\.0+)?(?![\d.])/.test(visible(t)))
          out.negative_ticks.push(svg.id + ': tick "' + visible(t) + '"');
    const plot = svg.querySelector('rect.plot');
    const marks = svg.querySelectorAll('circle, path.err, path.ci, line.mean, rect.bar, polyline');
    if (!plot) {
      if (marks.length) out.outside.push(svg.id + ': marks but no plot area');
      continue;
    }
    const p = box(plot);
    for (const m of marks) {
      out.marks++;
      const b = box(m);
      let inside;
      if (m.tagName === 'circle') {
        const x = (b.left + b.right) / 2, y = (b.top + b.bottom) / 2;
        inside = x >= p.left - 1 && x <= p.right + 1 && y >= p.top - 1 && y <= p.bottom + 1;
      } else {
        inside = b.left >= p.left - 2 && b.right <= p.right + 2 && b.top >= p.top - 2 && b.bottom <= p.bottom + 2;
      }
      if (!inside) {
        const t = m.querySelector('title');
        out.outside.push(svg.id + ': ' + m.tagName + ' ' + (t ? t.textContent : '') +
          ' at [' + [b.left, b.top, b.right, b.bottom].map(Math.round) + '] plot [' +
          [p.left, p.top, p.right, p.bottom].map(Math.round) + ']');
      }
    }
    const open = svg.querySelectorAll('path.open');
    out.open += open.length;
    if (open.length) {
      const note = [...svg.querySelectorAll('text.note')].some((t) => /interval reaches 0/.test(t.textContent));
      const titled = [...open].some((o) => /interval reaches 0/.test((o.querySelector('title') || {}).textContent || ''));
      if (!note || !titled) out.outside.push(svg.id + ': open-ended bar without the label "interval reaches 0"');
    }
  }
  // Visible text: no JSON, no Rust identifiers. Code and command lines may
  // hold option names with underscores; everything else is words.
  // Each text node on its own (joined by a space, so neighbouring cells do
  // not run into one word).
  const words = (skip) => {
    const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const parts = [];
    for (let n = w.nextNode(); n; n = w.nextNode())
      if (!n.parentElement.closest(skip)) parts.push(n.textContent);
    return parts.join(' ');
  };
  const all = words('title,desc,style,script,#dom-check');
  const prose = words('title,desc,style,script,#dom-check,code,pre');
  const flag = (re, text, what) => {
    const m = text.match(re);
    if (m) out.raw.push(what + ': ' + m.slice(0, 5).join(' | '));
  };
  flag(/\{"[^"]*":|"[a-z_]+"\s*:\s*["{\[\d]/g, all, 'JSON');
  flag(/\b(Some|Ok|Err)\([^)]*\)|\bNone\b|::[A-Za-z]/g, prose, 'Rust');
  flag(/\b[A-Z][a-z]+[A-Z][a-z]\w*\b/g, prose, 'CamelCase name');
  flag(/\b(order|status|verdict|outcome|severity|kind)\s*[:=]?\s*(Given|Random|Interleaved|Done|Pending|Failed|Better|Worse|NoChange|Undecided|Critical|Warning|Info)\b/g, prose, 'enum name');
  // snake_case words: names the page itself shows as code (a finding's
  // kind, a function) may be referred to in prose; the test keeps the
  // others that are not option names.
  const snake = /\b[a-z]+(_[a-z0-9]+)+\b/g;
  const code = new Set();
  document.querySelectorAll('code,pre').forEach((c) => (c.textContent.match(snake) || []).forEach((w) => code.add(w)));
  out.snake = [...new Set(prose.match(snake) || [])].filter((w) => !code.has(w));
  const pre = document.createElement('pre');
  pre.id = 'dom-check';
  // ASCII without &, < and >: the dumped DOM shows it unescaped.
  pre.textContent = JSON.stringify(out).replace(/[^\x20-\x7e]|[<>&]/g,
    (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  document.body.appendChild(pre);
})();

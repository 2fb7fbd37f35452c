// Drives one burst of a `report --html` page under jsdom (NODE_PATH: tests/tools/get-jsdom.sh)
// as a person would: click a frame, type a search, drag over the sub-second strip. Prints one
// JSON object of what the page then shows; tests/e2e/test_flame_page.py checks it against the
// run dir's folded and times files.
//   node flame_page_jsdom.js PAGE BURST-ID FRAME TERM CELL_FROM CELL_TO
'use strict';
const fs = require('fs');
const { JSDOM } = require('jsdom');

const [page, burstId, frameName, term, cellFrom, cellTo] = process.argv.slice(2);
const dom = new JSDOM(fs.readFileSync(page, 'utf8'), { runScripts: 'dangerously' });
const { window } = dom;
const doc = window.document;
const div = doc.getElementById('burst-' + burstId);
const out = { errors: [] };

function frames() {
	return Array.from(div.querySelectorAll('svg.flame g.f')).map((g) => ({
		node: g.getAttribute('data-node'),
		name: g.querySelector('title').textContent.split('\n')[0],
		samples: +g.querySelector('title').textContent.split('\n')[1].split(' ')[0],
		width: +g.querySelector('rect').getAttribute('width'),
		cls: g.getAttribute('class'),
	}));
}
function fire(el, type) {
	el.dispatchEvent(new window.MouseEvent(type, { bubbles: true, cancelable: true }));
}

window.addEventListener('error', (e) => out.errors.push(String(e.message)));
if (!div) {
	out.errors.push('no burst ' + burstId);
} else {
	let f = frames();
	out.drawn = f.length;
	out.root = f.find((x) => x.name === 'all');
	out.hot = f.filter((x) => x.cls.split(' ').includes('hot')).map((x) => x.name);
	out.kinds = Array.from(new Set(f.map((x) => x.cls.split(' ')[1]))).sort();
	// click: the frame fills the width
	const target = f.find((x) => x.name === frameName);
	if (target) {
		const g = div.querySelector('svg.flame g.f[data-node="' + target.node + '"] rect');
		fire(g, 'click');
		f = frames();
		out.zoomed = f.find((x) => x.node === target.node);
		out.zoomedDim = f.filter((x) => x.cls.split(' ').includes('dim')).length;
		fire(div.querySelector('button.reset'), 'click');
		out.unzoomed = frames().find((x) => x.node === target.node);
	}
	// search: the share of the samples whose stack has a matching frame
	const input = div.querySelector('input.search');
	input.value = term;
	input.dispatchEvent(new window.Event('input', { bubbles: true }));
	out.matched = +div.querySelector('.matched').getAttribute('data-samples');
	out.matchedText = div.querySelector('.matched').textContent;
	out.highlighted = frames().filter((x) => x.cls.split(' ').includes('match')).length;
	input.value = '';
	input.dispatchEvent(new window.Event('input', { bubbles: true }));
	// the strip: a drag over cells redraws the flame graph for that range
	const strip = div.querySelector('svg.strip');
	out.strip = !!strip;
	if (strip) {
		out.cells = strip.querySelectorAll('rect.cell').length;
		const a = strip.querySelector('rect.cell[data-k="' + cellFrom + '"]');
		const z = strip.querySelector('rect.cell[data-k="' + cellTo + '"]');
		fire(a, 'mousedown');
		fire(z, 'mousemove');
		fire(z, 'mouseup');
		out.rangeSamples = +div.querySelector('.range').getAttribute('data-samples');
		out.rangeText = div.querySelector('.range').textContent;
		out.rangeRoot = frames().find((x) => x.name === 'all');
		out.selected = strip.querySelectorAll('rect.cell.sel').length;
		fire(div.querySelector('button.whole'), 'click');
		out.wholeRoot = frames().find((x) => x.name === 'all');
	}
}
process.stdout.write(JSON.stringify(out) + '\n');

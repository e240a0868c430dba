// Parses Mermaid diagrams with Mermaid's own parser (the one GitHub and GitLab run) and reports
// each one's nodes and edges with their labels decoded, for tests/render/test_graph_mermaid.py.
// stdin: lines, each a JSON array of diagram texts; stdout: a line each, of {ok, type, nodes, edges} or {ok, error}.
import { createInterface } from 'node:readline';
import { JSDOM } from 'jsdom';

const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import('mermaid');
mermaid.initialize({ startOnLoad: false, securityLevel: 'strict' });

// Mermaid keeps an entity code (#34;) as a placeholder until it draws: decode it as drawing does.
const decode = (s) => String(s).replace(/ﬂ°°(\d+)¶ß/g, (_, n) => String.fromCodePoint(Number(n)));

// One JSON array of diagram texts a line in, one JSON array of results a line out, until stdin ends.
const parse = async (text) => {
  try {
    const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
    const vertices = diagram.db.getVertices();
    const nodes = vertices instanceof Map ? [...vertices.values()] : Object.values(vertices);
    return {
      ok: true,
      type: diagram.type,
      nodes: nodes.map((v) => ({ id: v.id, text: decode(v.text), classes: v.classes })),
      edges: diagram.db.getEdges().map((e) => ({ start: e.start, end: e.end, text: decode(e.text) })),
    };
  } catch (err) {
    return { ok: false, error: String(err && err.message ? err.message : err) };
  }
};
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  const results = [];
  for (const text of JSON.parse(line)) results.push(await parse(text));
  process.stdout.write(JSON.stringify(results) + '\n');
}

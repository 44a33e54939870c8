/**
 * The console's workflow editor model (api/console/ui/parts/workflow-draft.ts), without a browser:
 * every workflow the suite has (the recorded run histories' definitions and every workers list
 * written in test/) opened and saved without a change comes back byte for byte; the operations
 * build what the API's own validator accepts and touch nothing else; the API's real messages land
 * on the step, edge or field they name.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import {
  addStep,
  connect,
  disconnect,
  DraftHistory,
  edgeKindsOf,
  edgesOf,
  fromWorkflow,
  locateMessage,
  moveStep,
  newDraft,
  newWorkerId,
  predecessors,
  removeStep,
  renameStep,
  setScript,
  setScriptInput,
  setSource,
  setStepType,
  sourceOf,
  targets,
  toWorkflowBody,
  WRITABLE_FIELDS,
  type WorkflowDraft,
} from '../../api/console/ui/parts/workflow-draft';
import { WorkerNodeInput, WorkflowCreate } from '../../api/schemas/workflow';
import { InvalidInput } from '../../engine/platform/errors';
import { bodyValidator } from '../../engine/platform/schema-validator';
import { StorableJson } from '../../engine/store/field-schemas';
import { parseDefinition, type WorkerNodeRequest } from '../../engine/workflows/workflow-definition';
import { parseScheduleConfig } from '../../engine/workflows/schedule-config';

const TEST_ROOT = path.resolve(__dirname, '..');

/** The API's create schema, then its graph rules: what a POST /v2/workflows of these workers meets. */
const validateWorkflow = bodyValidator(WorkflowCreate, [WorkerNodeInput, StorableJson]);
function apiDefinition(workers: unknown) {
  validateWorkflow({ name: 'W', workers });
  return parseDefinition(workers as WorkerNodeRequest[]);
}
const HISTORIES = path.join(TEST_ROOT, 'workflows', 'fixtures', 'histories');

type Body = Record<string, unknown> & { workers: Array<Record<string, unknown>> };

/** The workflow each recorded Temporal history ran: its name and its workers as stored. */
function historyFixtures(): Array<[string, Body]> {
  const out: Array<[string, Body]> = [];
  for (const file of readdirSync(HISTORIES, { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.json')) continue;
    const history = JSON.parse(readFileSync(path.join(HISTORIES, file), 'utf8')) as {
      events: Array<{
        workflowExecutionStartedEventAttributes?: { input: { payloads: Array<{ data: string }> } };
      }>;
    };
    const started = history.events[0]!.workflowExecutionStartedEventAttributes!;
    const input = JSON.parse(Buffer.from(started.input.payloads[0]!.data, 'base64').toString('utf8')) as {
      workflowId: string;
      workflowName: string;
      workers: Body['workers'];
    };
    out.push([
      `histories/${file}`,
      { id: input.workflowId, name: input.workflowName, workers: input.workers, version: '1' },
    ]);
  }
  return out;
}

/**
 * A literal of the test's source as a value: what is not a literal (a variable, a call, an id made
 * by workerId()) becomes a string naming it, the same text the same string, so edges still meet
 * the ids they name. A spread of something other than a literal is left out.
 */
function valueOf(node: ts.Expression): unknown {
  if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isNonNullExpression(node)) {
    return valueOf(node.expression);
  }
  if (ts.isSatisfiesExpression(node)) return valueOf(node.expression);
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isNumericLiteral(node)) return Number(node.text);
  if (
    ts.isPrefixUnaryExpression(node) &&
    node.operator === ts.SyntaxKind.MinusToken &&
    ts.isNumericLiteral(node.operand)
  ) {
    return -Number(node.operand.text);
  }
  if (node.kind === ts.SyntaxKind.TrueKeyword) return true;
  if (node.kind === ts.SyntaxKind.FalseKeyword) return false;
  if (node.kind === ts.SyntaxKind.NullKeyword) return null;
  if (ts.isArrayLiteralExpression(node)) {
    return node.elements.flatMap((element) => {
      if (ts.isSpreadElement(element)) {
        const inner = valueOf(element.expression);
        return Array.isArray(inner) ? inner : [];
      }
      return [valueOf(element)];
    });
  }
  if (ts.isObjectLiteralExpression(node)) {
    const out: Record<string, unknown> = {};
    for (const property of node.properties) {
      if (ts.isPropertyAssignment(property)) {
        out[property.name.getText().replace(/^['"]|['"]$/g, '')] = valueOf(property.initializer);
      } else if (ts.isShorthandPropertyAssignment(property)) {
        out[property.name.text] = `‹${property.name.text}›`;
      } else if (ts.isSpreadAssignment(property)) {
        const inner = valueOf(property.expression);
        if (inner && typeof inner === 'object' && !Array.isArray(inner)) Object.assign(out, inner);
        else out[`‹...${property.expression.getText()}›`] = `‹${property.expression.getText()}›`;
      }
    }
    return out;
  }
  if (ts.isIdentifier(node) && node.text === 'undefined') return undefined;
  return `‹${node.getText().replace(/\s+/g, ' ').slice(0, 120)}›`;
}

/** Every workers list written in test/ (an array literal holding a STARTER), with its body. */
function sourceFixtures(): Array<[string, Body]> {
  const out: Array<[string, Body]> = [];
  const files = readdirSync(TEST_ROOT, { recursive: true, encoding: 'utf8' }).filter(
    (file) => file.endsWith('.ts') && !file.includes('node_modules'),
  );
  for (const file of files) {
    const text = readFileSync(path.join(TEST_ROOT, file), 'utf8');
    if (!text.includes('STARTER')) continue;
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      if (
        ts.isArrayLiteralExpression(node) &&
        node.elements.some(
          (element) =>
            ts.isObjectLiteralExpression(element) &&
            element.properties.some(
              (p) =>
                ts.isPropertyAssignment(p) &&
                p.name.getText() === 'type' &&
                p.initializer.getText() === "'STARTER'",
            ),
        )
      ) {
        const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
        const holder = node.parent;
        const body =
          ts.isPropertyAssignment(holder) &&
          holder.name.getText() === 'workers' &&
          ts.isObjectLiteralExpression(holder.parent)
            ? (valueOf(holder.parent) as Body)
            : { name: `${file}:${line}`, workers: valueOf(node) as Body['workers'] };
        body.workers = body.workers.filter((w) => w !== null && typeof w === 'object');
        out.push([`${file}:${line}`, body]);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return out;
}

const FIXTURES = [...historyFixtures(), ...sourceFixtures()];

/** What a client may write of a workflow: the fields POST and PUT take. */
function writable(workflow: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of WRITABLE_FIELDS) if (key in workflow) out[key] = workflow[key];
  return out;
}

describe('the workflow editor model', () => {
  test('finds the suite’s workflows: the recorded histories and the workers lists of test/', () => {
    expect(historyFixtures().length).toBeGreaterThanOrEqual(11);
    // 84 lists when this was written, in 40 files; the suite only grows.
    expect(sourceFixtures().length).toBeGreaterThanOrEqual(80);
    const types = new Set(FIXTURES.flatMap(([, body]) => body.workers.map((w) => w.type)));
    expect([...types].sort()).toEqual(['BARRIER', 'BASIC', 'CONDITIONAL', 'ENDER', 'FORKER', 'STARTER']);
    // Inline Python, templates and bare-id edges are among them.
    const workers = FIXTURES.flatMap(([, body]) => body.workers);
    expect(workers.some((w) => w.script_runtime === 'python3.11')).toBe(true);
    expect(workers.some((w) => typeof w.template_id === 'string' && w.template_id !== '')).toBe(true);
    expect(workers.some((w) => 'next_true' in w)).toBe(true);
  });

  test.each(FIXTURES)(
    '%s: opened and saved without a change, it is the same, byte for byte',
    (_name, workflow) => {
      const before = JSON.stringify(workflow);
      const draft = fromWorkflow(workflow);
      // What the editor reads to draw and describe it changes nothing.
      for (const w of draft.workers) {
        edgesOf(w);
        sourceOf(w);
        edgeKindsOf(w.type);
        predecessors(draft, w.id);
        locateMessage(`Worker ${w.id} is not reachable from the STARTER.`, draft);
      }
      // Kept in the tab's storage and read back (an unsaved draft survives a reload).
      const kept = JSON.parse(JSON.stringify(draft)) as WorkflowDraft;
      const body = toWorkflowBody(kept);
      expect(JSON.stringify(body)).toBe(JSON.stringify(writable(workflow)));
      expect(body).toEqual(writable(workflow));
      expect(JSON.stringify(workflow)).toBe(before);
    },
  );

  test.each(FIXTURES)('%s: renaming one step changes that name and nothing else', (_name, workflow) => {
    const draft = fromWorkflow(workflow);
    for (const [index, w] of draft.workers.entries()) {
      const renamed = toWorkflowBody(renameStep(draft, w.id, `${String(w.name)} (renamed)`)) as Body;
      renamed.workers.forEach((other, i) => {
        if (i === index) {
          expect({ ...other, name: w.name }).toEqual(w);
          // A step written without a name gets one, last; a named one keeps its key order.
          expect(Object.keys(other)).toEqual('name' in w ? Object.keys(w) : [...Object.keys(w), 'name']);
        } else {
          expect(JSON.stringify(other)).toBe(JSON.stringify(draft.workers[i]));
        }
      });
    }
  });

  test('a branching workflow built from nothing is one the API’s validator accepts', () => {
    let d = newDraft();
    const [start, end] = d.workers.map((w) => w.id) as [string, string];
    const ids = {
      cond: newWorkerId(),
      fork: newWorkerId(),
      each: newWorkerId(),
      join: newWorkerId(),
      none: newWorkerId(),
    };
    d = { ...d, name: 'Branching' };
    d = addStep(
      d,
      {
        id: ids.cond,
        name: 'Any symbols?',
        type: 'CONDITIONAL',
        source: {
          kind: 'script',
          runtime: 'javascript',
          script: 'function main(a) { return a.inputs.symbols.length > 0; }',
        },
      },
      { id: start, kind: 'next' },
    );
    // The CONDITIONAL took over what followed the STARTER as its true edge.
    expect(targets(d.workers[1]!, 'next_true')).toEqual([end]);
    d = addStep(
      d,
      { id: ids.fork, name: 'Each symbol', type: 'FORKER', source: { kind: 'none' } },
      { id: ids.cond, kind: 'next_true' },
    );
    d = addStep(
      d,
      {
        id: ids.each,
        name: 'Price one',
        type: 'BASIC',
        source: {
          kind: 'script',
          runtime: 'python3.11',
          script: 'def main(args):\n    return {"symbol": args["inputs"]}\n',
        },
      },
      { id: ids.fork, kind: 'next' },
    );
    d = addStep(
      d,
      { id: ids.join, name: 'Join', type: 'BARRIER', source: { kind: 'none' } },
      { id: ids.each, kind: 'next' },
    );
    d = addStep(
      d,
      {
        id: ids.none,
        name: 'Nothing to do',
        type: 'BASIC',
        source: {
          kind: 'script',
          runtime: 'javascript',
          script: 'function main() { return { none: true }; }',
        },
      },
      { id: ids.cond, kind: 'next_false' },
    );
    // The false branch joins the ENDER too.
    d = connect(d, ids.none, 'next', end);
    const body = toWorkflowBody(d) as Body;
    const { workers, plan } = apiDefinition(body.workers);
    expect(plan).toEqual({ starterId: start, enderId: end, barrierOf: { [ids.fork]: ids.join } });
    expect(workers.map((w) => w.name)).toEqual([
      'Start',
      'Any symbols?',
      'Nothing to do',
      'Each symbol',
      'Price one',
      'Join',
      'End',
    ]);
    expect(
      predecessors(d, end)
        .map((e) => e.from)
        .sort(),
    ).toEqual([ids.join, ids.none].sort());
    expect(body.workers.find((w) => w.id === ids.each)).toMatchObject({
      script_runtime: 'python3.11',
      template_id: null,
    });
    expect(body.workers.find((w) => w.id === ids.none)).not.toHaveProperty('script_runtime');
  });

  test('removing a step keeps its chain whole; a CONDITIONAL’s edges hold one step', () => {
    let d = newDraft();
    const [start, end] = d.workers.map((w) => w.id) as [string, string];
    const [a, b] = [newWorkerId(), newWorkerId()];
    const script = {
      kind: 'script',
      runtime: 'javascript',
      script: 'function main() { return 1; }',
    } as const;
    d = addStep(d, { id: a, name: 'A', type: 'BASIC', source: script }, { id: start, kind: 'next' });
    d = addStep(d, { id: b, name: 'B', type: 'BASIC', source: script }, { id: a, kind: 'next' });
    expect(d.workers.map((w) => w.name)).toEqual(['Start', 'A', 'B', 'End']);
    const without = removeStep(d, a);
    expect(targets(without.workers[0]!, 'next')).toEqual([b]);
    expect(() => apiDefinition(toWorkflowBody(without).workers)).not.toThrow();
    // Moving: A and B trade places on the path and in the list.
    const moved = moveStep(d, a, 'later')!;
    expect(moved.workers.map((w) => w.name)).toEqual(['Start', 'B', 'A', 'End']);
    expect(targets(moved.workers[0]!, 'next')).toEqual([b]);
    expect(targets(moved.workers[1]!, 'next')).toEqual([a]);
    expect(targets(moved.workers[2]!, 'next')).toEqual([end]);
    expect(moveStep(moved, a, 'earlier')).toEqual(d);
    // The STARTER and the ENDER stay where they are.
    expect(moveStep(d, start, 'later')).toBeNull();
    expect(moveStep(d, a, 'earlier')).toBeNull();
    // A CONDITIONAL: its true edge replaced, not added to; a type change carries its edges over.
    let c = setStepType(d, a, 'CONDITIONAL');
    expect(c.workers[1]).toMatchObject({ next: [], next_true: [b], next_false: [] });
    c = connect(c, a, 'next_false', end);
    c = connect(c, a, 'next_true', end);
    expect(c.workers[1]).toMatchObject({ next_true: [end], next_false: [end] });
    c = disconnect(c, a, 'next_false', end);
    expect(c.workers[1]).toMatchObject({ next_false: [] });
    const back = setStepType(c, a, 'BASIC');
    expect(back.workers[1]).not.toHaveProperty('next_true');
    expect(back.workers[1]).toMatchObject({ next: [end] });
    expect(setStepType(d, b, 'ENDER').workers[2]).toMatchObject({ next: [] });
  });

  test('an edge written as a bare id stays one; extra fields of a step stay as they came', () => {
    const [s, x, e] = [newWorkerId(), newWorkerId(), newWorkerId()];
    const workflow = {
      name: 'Bare',
      workers: [
        { id: s, name: 'S', type: 'STARTER', next: x, gui: { x: 10, y: 20 } },
        { note: 'first', id: x, name: 'X', type: 'BASIC', script: 'function main() {}', next: e },
        { id: e, name: 'E', type: 'ENDER' },
      ],
    };
    let d = fromWorkflow(workflow);
    d = renameStep(d, x, 'Renamed');
    d = setScript(d, x, 'function main() { return 2; }');
    d = setScriptInput(d, x, 'n', 2);
    expect(toWorkflowBody(d).workers).toEqual([
      workflow.workers[0],
      {
        note: 'first',
        id: x,
        name: 'Renamed',
        type: 'BASIC',
        script: 'function main() { return 2; }',
        next: e,
        script_inputs: { n: 2 },
      },
      workflow.workers[2],
    ]);
    // A second target makes it a list; back to one, a list it stays.
    const two = connect(d, x, 'next', s);
    expect(two.workers[1]!.next).toEqual([e, s]);
    // From an inline script to a template: the script goes, the inputs start again.
    const templated = setSource(d, x, { kind: 'template', templateId: 'wtpl_0123456789012345678901234' });
    expect(templated.workers[1]).toMatchObject({
      template_id: 'wtpl_0123456789012345678901234',
      script: null,
      script_inputs: {},
    });
    const python = setSource(templated, x, {
      kind: 'script',
      runtime: 'python3.11',
      script: 'def main(args):\n    return 1\n',
    });
    expect(python.workers[1]).toMatchObject({ template_id: null, script_runtime: 'python3.11' });
  });

  test('undo and redo walk the drafts; typing into one field is one step', () => {
    let clock = 0;
    const start = newDraft();
    const history = new DraftHistory(start, () => clock);
    const id = start.workers[0]!.id;
    history.push(renameStep(history.current, id, 'S'), `name:${id}`);
    clock += 200;
    history.push(renameStep(history.current, id, 'St'), `name:${id}`);
    clock += 200;
    history.push(renameStep(history.current, id, 'Sta'), `name:${id}`);
    // Nothing changed: no step.
    history.push(history.current, 'other');
    expect(history.current.workers[0]!.name).toBe('Sta');
    expect(history.undo()).toEqual(start);
    expect(history.canUndo).toBe(false);
    expect(history.redo()!.workers[0]!.name).toBe('Sta');
    // A pause ends the run of typing.
    clock += 5000;
    history.push(renameStep(history.current, id, 'Start!'), `name:${id}`);
    expect(history.undo()!.workers[0]!.name).toBe('Sta');
    // A change after an undo drops what could be redone.
    history.push(renameStep(history.current, id, 'Other'), null);
    expect(history.canRedo).toBe(false);
  });

  describe('the API’s messages land where they belong', () => {
    /** The message the API's own check answers for this list of workers. */
    const messageOf = (workers: unknown): string => {
      try {
        apiDefinition(workers);
      } catch (error) {
        if (error instanceof InvalidInput) return error.message;
        throw error;
      }
      throw new Error('accepted');
    };
    const base = () => {
      const [s, c, t, f, e] = [newWorkerId(), newWorkerId(), newWorkerId(), newWorkerId(), newWorkerId()];
      const js = 'function main() { return true; }';
      const draft = fromWorkflow({
        name: 'W',
        workers: [
          { id: s, name: 'S', type: 'STARTER', next: [c] },
          { id: c, name: 'C', type: 'CONDITIONAL', script: js, next_true: [t], next_false: [f] },
          { id: t, name: 'T', type: 'BASIC', script: js, next: [e] },
          { id: f, name: 'F', type: 'BASIC', script: js, next: [e] },
          { id: e, name: 'E', type: 'ENDER' },
        ],
      });
      return { draft, s, c, t, f, e };
    };
    const where = (draft: WorkflowDraft) => locateMessage(messageOf(toWorkflowBody(draft).workers), draft);

    test('the base is accepted', () => {
      expect(() => messageOf(toWorkflowBody(base().draft).workers)).toThrow('accepted');
    });
    test('a CONDITIONAL without its false edge: that edge of that step', () => {
      const { draft, c, f } = base();
      expect(where(disconnect(draft, c, 'next_false', f))).toEqual({
        kind: 'step',
        id: c,
        field: 'next_false',
      });
    });
    test('a BASIC with two next steps: its next edge', () => {
      const { draft, t, f } = base();
      expect(where(connect(draft, t, 'next', f))).toEqual({ kind: 'step', id: t, field: 'next' });
    });
    test('an edge to a step that is not there: that edge', () => {
      const { draft, t } = base();
      const ghost = newWorkerId();
      expect(where(connect(disconnect(draft, t, 'next', draft.workers[4]!.id), t, 'next', ghost))).toEqual({
        kind: 'step',
        id: t,
        field: 'next',
        to: ghost,
      });
    });
    test('a BASIC with neither template nor script: its source, by place', () => {
      const { draft, f } = base();
      expect(where(setSource(draft, f, { kind: 'none' }))).toEqual({ kind: 'step', id: f, field: 'source' });
    });
    test('an empty step name: its name, by place (the schema’s own words)', () => {
      const { draft, t } = base();
      expect(messageOf(toWorkflowBody(renameStep(draft, t, '')).workers)).toMatch(/^workers\[2\]\.name /);
      expect(where(renameStep(draft, t, ''))).toEqual({ kind: 'step', id: t, field: 'name' });
    });
    test('a step nothing reaches, a cycle: that step', () => {
      const { draft, s, c, t, e } = base();
      const orphan = addStep(draft, {
        id: newWorkerId(),
        name: 'O',
        type: 'BASIC',
        source: { kind: 'script', runtime: 'javascript', script: 'x' },
      });
      const orphanId = orphan.workers[5]!.id;
      expect(where(connect(orphan, orphanId, 'next', e))).toEqual({
        kind: 'step',
        id: orphanId,
        field: null,
      });
      const cycle = connect(disconnect(draft, t, 'next', e), t, 'next', c);
      expect(where(cycle)).toMatchObject({ kind: 'step', field: null });
      expect([s, c, t]).toContain((where(cycle) as { id: string }).id);
    });
    test('two STARTERs, no ENDER: the steps as a whole', () => {
      const { draft, f } = base();
      expect(where(setStepType(draft, f, 'STARTER'))).toEqual({ kind: 'steps' });
      const { draft: d2, e, t, f: f2 } = base();
      expect(where(removeStep(disconnect(disconnect(d2, t, 'next', e), f2, 'next', e), e))).toEqual({
        kind: 'steps',
      });
    });
    test('a fork without its join: the FORKER', () => {
      const { draft, s, c } = base();
      const fork = newWorkerId();
      const forked = addStep(
        draft,
        { id: fork, name: 'Fork', type: 'FORKER', source: { kind: 'none' } },
        { id: s, kind: 'next' },
      );
      expect(targets(forked.workers[1]!, 'next')).toEqual([c]);
      expect(where(forked)).toMatchObject({ kind: 'step', id: fork });
    });
    test('a schedule, a name, on_failure: their fields', () => {
      const { draft } = base();
      const cron = (() => {
        try {
          parseScheduleConfig({ cron: 'every morning' });
        } catch (error) {
          return (error as Error).message;
        }
        return '';
      })();
      expect(locateMessage(cron, draft)).toEqual({ kind: 'field', field: 'trigger_config.cron' });
      expect(locateMessage('name is required: a string of 1 to 200 characters.', draft)).toEqual({
        kind: 'field',
        field: 'name',
      });
      expect(
        locateMessage('on_failure.to is required for an SMTP integration: the addresses to alert.', draft),
      ).toEqual({
        kind: 'field',
        field: 'on_failure',
      });
      expect(
        locateMessage('trigger_config.integration_id: integration intg_x not found in this account.', draft),
      ).toEqual({
        kind: 'field',
        field: 'trigger_config.integration_id',
      });
      expect(locateMessage('Something else went wrong.', draft)).toEqual({ kind: 'general' });
    });
    test('a template’s form input: that input of that step', () => {
      const { draft, t } = base();
      expect(
        locateMessage(`Worker ${t} (template wtpl_x): the required script input "n" is missing.`, draft),
      ).toEqual({
        kind: 'step',
        id: t,
        field: 'input:n',
      });
    });
  });
});

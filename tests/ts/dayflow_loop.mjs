// The Dayflow agent loop written against the official TypeScript SDK (@anthropic-ai/sdk): send, read
// stop_reason, run the tools, return their results, repeat. It knows nothing of the harness: pointed at
// `harness proxy` it is recorded, pointed at `harness serve` it is replayed.
//
//   ANTHROPIC_BASE_URL=http://127.0.0.1:8767 ANTHROPIC_API_KEY=replay node dayflow_loop.mjs [--stream] [--spec F]
//
// The spec (JSON) may set model, max_tokens, system, user, tools, fixtures ({tool name: JSON file}),
// max_steps, max_retries; what it leaves out comes from DEFAULTS. The tools answer with the fixture
// file's JSON (compact), so a run is deterministic. Prints one JSON object: the final text, the stop
// reasons, the tool calls, the usage; or {"error": ...} and exit code 1 when the API call fails.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';

const here = dirname(fileURLToPath(import.meta.url));
const fixturesDir = join(here, '..', '..', 'harness', 'agents', 'dayflow', 'fixtures');

const objectSchema = (properties) => ({ type: 'object', properties, additionalProperties: false });

const DEFAULTS = {
  model: 'claude-sonnet-5',
  max_tokens: 2048,
  max_steps: 10,
  max_retries: 2,
  system:
    'You are Dayflow, a morning-brief assistant. Use the tools to read the inbox, calendar and tasks, then ' +
    'write a short brief with the sections "## Today", "## Needs a reply" and "## Deadlines this week". ' +
    'Keep it short, and skip newsletters and promotions.',
  user: 'Today is Monday, 7 September 2026 (2026-09-07). Write my morning brief.',
  tools: [
    { name: 'read_inbox', description: "Read the user's inbox, newest first.",
      input_schema: objectSchema({ limit: { type: 'integer', minimum: 1, maximum: 50 } }) },
    { name: 'read_calendar', description: "Read the user's calendar from today on.",
      input_schema: objectSchema({ days: { type: 'integer', minimum: 1, maximum: 31 } }) },
    { name: 'read_tasks', description: "Read the user's to-do list.",
      input_schema: objectSchema({ include_done: { type: 'boolean' } }) },
  ],
  fixtures: {
    read_inbox: join(fixturesDir, 'inbox.json'),
    read_calendar: join(fixturesDir, 'calendar.json'),
    read_tasks: join(fixturesDir, 'tasks.json'),
  },
};

function parseArgs(argv) {
  const options = { stream: false, spec: null };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--stream') options.stream = true;
    else if (argv[i] === '--spec') options.spec = argv[++i];
    else throw new Error(`unknown argument ${argv[i]}; usage: dayflow_loop.mjs [--stream] [--spec FILE]`);
  }
  return options;
}

// A tool result is data: the fixture's JSON, compact. An unknown tool is a result too, not a crash.
function runTool(spec, name) {
  const file = spec.fixtures[name];
  if (!file) return { content: JSON.stringify({ error: `unknown tool: ${name}` }), is_error: true };
  return { content: JSON.stringify(JSON.parse(readFileSync(file, 'utf8'))), is_error: false };
}

async function callModel(client, params, stream, counters) {
  if (!stream) return client.messages.create(params);
  const messageStream = client.messages.stream(params);
  messageStream.on('text', () => { counters.textEvents += 1; });
  return messageStream.finalMessage();
}

async function runLoop(client, spec, stream) {
  const messages = [{ role: 'user', content: spec.user }];
  const result = { final_text: '', stop_reason: null, stop_reasons: [], steps: 0, tool_calls: [],
                   usage: { input_tokens: 0, output_tokens: 0 }, stream, text_events: 0 };
  const counters = { textEvents: 0 };
  for (let step = 1; step <= spec.max_steps; step++) {
    const response = await callModel(client, {
      model: spec.model, max_tokens: spec.max_tokens, system: spec.system, tools: spec.tools, messages,
    }, stream, counters);
    result.steps = step;
    result.stop_reason = response.stop_reason;
    result.stop_reasons.push(response.stop_reason);
    result.usage.input_tokens += response.usage.input_tokens;
    result.usage.output_tokens += response.usage.output_tokens;
    result.text_events = counters.textEvents;
    if (response.stop_reason !== 'tool_use') {
      // end_turn is the clean exit; max_tokens, refusal and the rest are reported as they are.
      result.final_text = response.content.filter((block) => block.type === 'text').map((b) => b.text).join('');
      return result;
    }
    // The assistant turn goes back verbatim; every tool_use gets its tool_result, in one user turn.
    messages.push({ role: 'assistant', content: response.content });
    const results = [];
    for (const block of response.content) {
      if (block.type !== 'tool_use') continue;
      result.tool_calls.push({ step, id: block.id, name: block.name, input: block.input });
      const output = runTool(spec, block.name);
      results.push({ type: 'tool_result', tool_use_id: block.id, content: output.content,
                     ...(output.is_error ? { is_error: true } : {}) });
    }
    messages.push({ role: 'user', content: results });
  }
  result.final_text = '';
  result.stop_reason = 'step_limit';
  return result;
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const spec = { ...DEFAULTS, ...(options.spec ? JSON.parse(readFileSync(options.spec, 'utf8')) : {}) };
  const client = new Anthropic({ maxRetries: spec.max_retries });  // base URL and key from the environment
  try {
    const result = await runLoop(client, spec, options.stream);
    process.stdout.write(JSON.stringify(result) + '\n');
  } catch (error) {
    const report = { error: { name: error?.constructor?.name ?? 'Error', status: error?.status ?? null,
                              message: error?.message ?? String(error),
                              harness_miss: error?.headers?.get?.('x-harness-miss') ?? null } };
    process.stdout.write(JSON.stringify(report) + '\n');
    process.exitCode = 1;
  }
}

await main();

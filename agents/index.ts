/**
 * @fileoverview The agent framework's public surface (`import … from "specc/agents"`): run an agent
 * token by token under its spec (`runAgent`) or in chunks against a completion API (`runChunked`),
 * check few-shot examples, plan with backtracking, and enforce rules on tool calls.
 */
export {
  runAgent, evaluator, envText, llamaBackend, chooseByLogProb, lengthNormalizedScore,
  type RunAgentOptions, type AgentResult, type AgentContext, type ToolHandler, type Tools, type EnvHandler,
  type ParallelHandler, type ActionCall, type ActionResult, type TokenBackend, type RawEnv,
} from "./runner.js";
export { typedTools, callsSince, plainResults, hermesResponses, type TypedCall, type CallRecord, type TypedHandler, type TypedToolsOptions } from "./tools.js";
export {
  runChunked, httpCompletions, DecodingMonitor, ChunkModeError,
  type ChunkedOptions, type ChunkedResult, type Complete, type CompletionResult,
} from "./chunk.js";
export { checkExamples, formatExamplesReport, type ExampleReport, type ExampleViolation, type CheckExamplesOptions } from "./examples-check.js";
export { plan, PlannerError, PlannerLimitError, type PlanOptions, type PlanResult, type Chooser, type ChoiceContext } from "./planner.js";
export { scriptedChooser, firstChooser, randomChooser, logprobChooser, llmChooser } from "./planner-choosers.js";
export {
  RuleEnforcer, toolCall, type ToolCall, type RuleEnforcerOptions, type EnforceOutcome, type Predicate,
  type AgentContext as RuleContext,
} from "./rules.js";
export { defaultPredicates, shellPredicates, emailPredicates } from "./rules-predicates.js";

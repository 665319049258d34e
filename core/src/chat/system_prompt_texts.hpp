// The fixed paragraphs the DeepSeek-V4 encoder writes into prompts (README §3.1, §3.9, §3.10;
// tests/data/chat/fixed_texts.json holds the same texts cut out of rendered prompts). They are
// part of the model's trained format: change nothing, not even whitespace.
#pragma once

#include <string_view>

namespace tessera::chat {

// Reasoning effort "max" (preview profile) / "high" (official profile).
inline constexpr std::string_view kReasoningEffortAbsoluteMaximum =
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
    "You MUST be very thorough in your thinking and comprehensively decompose the problem to "
    "resolve the root cause, rigorously stress-testing your logic against all potential paths, "
    "edge cases, and adversarial scenarios.\n"
    "Explicitly write out your entire deliberation process, documenting every intermediate step, "
    "considered alternative, and rejected hypothesis to ensure absolutely no assumption is left "
    "unchecked.\n\n";

// Reasoning effort "max" (official profile). The dash is U+2014.
inline constexpr std::string_view kReasoningEffortBeyondMaximum =
    "Reasoning Effort: Beyond maximum \u2014 exhaustive, relentless, and uncompromising.\n"
    "You MUST reason with the utmost depth and rigor, leaving absolutely nothing to chance: "
    "exhaustively decompose the problem into its most fundamental components, trace every causal "
    "chain to its root, and resolve the underlying cause rather than any surface symptom.\n"
    "Do not stop reasoning until you have independently verified the solution from multiple "
    "angles and are certain that no assumption remains unchecked and no error remains "
    "undiscovered.\n\n";

// The tools section: this, the schemas (one JSON line per tool), then kToolsSectionAfterSchemas.
inline constexpr std::string_view kToolsSectionBeforeSchemas =
    "## Tools\n\n"
    "You have access to a set of tools to help answer the user's question. You can invoke tools "
    "by writing a \"<｜DSML｜tool_calls>\" block like the following:\n\n"
    "<｜DSML｜tool_calls>\n"
    "<｜DSML｜invoke name=\"$TOOL_NAME\">\n"
    "<｜DSML｜parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE"
    "</｜DSML｜parameter>\n"
    "...\n"
    "</｜DSML｜invoke>\n"
    "<｜DSML｜invoke name=\"$TOOL_NAME2\">\n"
    "...\n"
    "</｜DSML｜invoke>\n"
    "</｜DSML｜tool_calls>\n\n"
    "String parameters should be specified as is and set `string=\"true\"`. For all other types "
    "(numbers, booleans, arrays, objects), pass the value in JSON format and set "
    "`string=\"false\"`.\n\n"
    "If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning "
    "inside <think>...</think> BEFORE any tool calls or final response.\n\n"
    "Otherwise, output directly after </think> with tool calls or final response.\n\n"
    "### Available Tool Schemas\n\n";

inline constexpr std::string_view kToolsSectionAfterSchemas =
    "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool "
    "calls.\n";

// The response-format section: this, then the JSON of response_format.
inline constexpr std::string_view kResponseFormatSectionBeforeSchema =
    "## Response Format:\n\n"
    "You MUST strictly adhere to the following schema to reply:\n";

}  // namespace tessera::chat

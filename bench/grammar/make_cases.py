#!/usr/bin/env python3
"""Writes the schemas the grammar benches walk (grammar_mask_bench.cpp, peers.mjs) as one JSON
file: {"cases": [{"name", "group", "schema", "instances": [...]}]}. A case's instances are
written in the schema's property order, the canonical form every engine here accepts.
  - OpenAI's structured-output use cases (math tutor, event extraction, UI generation, research
    paper extraction, moderation) and a Codex-like review output schema, written here with one
    realistic instance each;
  - a tool schema of 50 properties (mixed types, half required), with an instance that leaves
    out some optional ones and one that gives all (node-llama-cpp's converter requires all);
  - a recursive tree, any JSON ({}), and a bounded string;
  - group "json-schema-test-suite": every draft 7 case of Debian's json-schema-test-suite (and
    its date, time, date-time and email formats) with its valid instances; the benches skip the
    cases an engine cannot compile and say how many.
Usage: make_cases.py OUT.json [--suite /usr/share/json-schema-test-suite/tests/draft7]
"""
import argparse
import glob
import json
import os

OPENAI_MATH = (
    {"type": "object", "properties": {
        "steps": {"type": "array", "items": {"type": "object", "properties": {
            "explanation": {"type": "string"}, "output": {"type": "string"}},
            "required": ["explanation", "output"], "additionalProperties": False}},
        "final_answer": {"type": "string"}},
     "required": ["steps", "final_answer"], "additionalProperties": False},
    {"steps": [
        {"explanation": "Start with the equation 8x + 7 = -23.", "output": "8x + 7 = -23"},
        {"explanation": "Subtract 7 from both sides to isolate the term with the variable.",
         "output": "8x = -30"},
        {"explanation": "Divide both sides by 8.", "output": "x = -30 / 8"}],
     "final_answer": "x = -3.75"})

OPENAI_EVENT = (
    {"type": "object", "properties": {
        "name": {"type": "string"}, "date": {"type": "string", "format": "date"},
        "participants": {"type": "array", "items": {"type": "string"}}},
     "required": ["name", "date", "participants"], "additionalProperties": False},
    {"name": "Science fair", "date": "2024-11-05",
     "participants": ["Alice", "Bob", "Charlie Brown"]})

OPENAI_UI = (
    {"$defs": {"ui": {"type": "object", "properties": {
        "type": {"type": "string", "enum": ["div", "button", "header", "section", "field", "form"]},
        "label": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/ui"}},
        "attributes": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "value": {"type": "string"}},
            "required": ["name", "value"], "additionalProperties": False}}},
        "required": ["type", "label", "children", "attributes"], "additionalProperties": False}},
     "$ref": "#/$defs/ui"},
    {"type": "form", "label": "Sign up", "children": [
        {"type": "field", "label": "Email", "children": [],
         "attributes": [{"name": "type", "value": "email"}, {"name": "required", "value": "true"}]},
        {"type": "button", "label": "Create account", "children": [],
         "attributes": [{"name": "kind", "value": "submit"}]}],
     "attributes": [{"name": "action", "value": "/signup"}]})

OPENAI_PAPER = (
    {"type": "object", "properties": {
        "title": {"type": "string"}, "authors": {"type": "array", "items": {"type": "string"}},
        "abstract": {"type": "string"}, "keywords": {"type": "array", "items": {"type": "string"}}},
     "required": ["title", "authors", "abstract", "keywords"], "additionalProperties": False},
    {"title": "Application of Quantum Algorithms in Interstellar Navigation: A New Frontier",
     "authors": ["Dr. Stella Voyager", "Dr. Nova Star", "Dr. Lyra Hunter"],
     "abstract": "This paper investigates the utilization of quantum algorithms to improve "
                 "interstellar navigation systems. By leveraging quantum superposition and "
                 "entanglement, our proposed navigation system can calculate optimal travel "
                 "paths through space-time anomalies more efficiently than classical methods.",
     "keywords": ["Quantum algorithms", "interstellar navigation", "space-time anomalies"]})

OPENAI_MODERATION = (
    {"type": "object", "properties": {
        "is_violating": {"type": "boolean"},
        "category": {"anyOf": [{"type": "string", "enum": ["violence", "sexual", "self_harm"]},
                               {"type": "null"}]},
        "explanation_if_violating": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
     "required": ["is_violating", "category", "explanation_if_violating"],
     "additionalProperties": False},
    {"is_violating": False, "category": None, "explanation_if_violating": None})

CODEX_REVIEW = (
    {"type": "object", "properties": {
        "findings": {"type": "array", "items": {"type": "object", "properties": {
            "title": {"type": "string"}, "body": {"type": "string"},
            "confidence_score": {"type": "number"},
            "priority": {"type": "integer", "minimum": 0, "maximum": 3},
            "code_location": {"type": "object", "properties": {
                "absolute_file_path": {"type": "string"},
                "line_range": {"type": "object", "properties": {
                    "start": {"type": "integer"}, "end": {"type": "integer"}},
                    "required": ["start", "end"], "additionalProperties": False}},
                "required": ["absolute_file_path", "line_range"], "additionalProperties": False}},
            "required": ["title", "body", "confidence_score", "priority", "code_location"],
            "additionalProperties": False}},
        "overall_correctness": {"type": "string",
                                "enum": ["patch is correct", "patch is incorrect"]},
        "overall_explanation": {"type": "string"},
        "overall_confidence_score": {"type": "number"}},
     "required": ["findings", "overall_correctness", "overall_explanation",
                  "overall_confidence_score"], "additionalProperties": False},
    {"findings": [
        {"title": "[P1] Off-by-one in the retry loop",
         "body": "The loop runs `attempts + 1` times, so a request configured for 3 attempts is "
                 "sent 4 times and the backoff doubles once more than intended.",
         "confidence_score": 0.8, "priority": 1,
         "code_location": {"absolute_file_path": "/repo/src/net/retry.cpp",
                           "line_range": {"start": 41, "end": 47}}},
        {"title": "[P2] Timeout not reset after a redirect",
         "body": "After following a redirect the deadline of the first request still applies.",
         "confidence_score": 0.55, "priority": 2,
         "code_location": {"absolute_file_path": "/repo/src/net/client.cpp",
                           "line_range": {"start": 120, "end": 133}}}],
     "overall_correctness": "patch is incorrect",
     "overall_explanation": "The retry change sends one request too many; the rest is sound.",
     "overall_confidence_score": 0.7})

RECURSIVE_TREE = (
    {"$defs": {"node": {"type": "object", "properties": {
        "name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["name", "children"], "additionalProperties": False}},
     "$ref": "#/$defs/node"},
    {"name": "root", "children": [{"name": "a", "children": [{"name": "a1", "children": []}]},
                                  {"name": "b", "children": []}]})

ANY_JSON = ({}, {"query": "weather in Paris", "limit": 10, "tags": ["a", "b"],
                 "nested": {"x": 1.5, "y": None, "z": [True, False]}})

BOUNDED_STRING = (
    {"type": "object", "properties": {
        "title": {"type": "string", "maxLength": 8},
        "year": {"type": "integer", "minimum": 1900, "maximum": 2100}},
     "required": ["title", "year"], "additionalProperties": False},
    {"title": "Quick ox", "year": 1987})

UNBOUNDED_STRING = (
    {"type": "object", "properties": {
        "title": {"type": "string"},
        "year": {"type": "integer", "minimum": 1900, "maximum": 2100}},
     "required": ["title", "year"], "additionalProperties": False},
    {"title": "Quick ox", "year": 1987})

# Prose of exactly n code points (an escape, an accented letter and an emoji among them).
def prose(n):
    words = ("The quick brown fox jumps over the lazy dog near the riverbank, while a caf\u00e9 "
             "owner counts the morning's receipts.\nEveryone agrees \U0001F600 the weather "
             "is fine today and the trains are running on time. ")
    text = ""
    while len(text) < n:
        text += words
    return text[:n]

# A post of at most 280 characters, written to the bound.
STRING_280 = (
    {"type": "object", "properties": {
        "text": {"type": "string", "maxLength": 280},
        "lang": {"type": "string", "enum": ["en", "fr", "de"]}},
     "required": ["text", "lang"], "additionalProperties": False},
    {"text": prose(280), "lang": "en"})

# A summary of 20 to 1000 characters, written to the upper bound.
STRING_20_1000 = (
    {"type": "object", "properties": {
        "summary": {"type": "string", "minLength": 20, "maxLength": 1000},
        "keywords": {"type": "array", "items": {"type": "string", "minLength": 20}}},
     "required": ["summary", "keywords"], "additionalProperties": False},
    {"summary": prose(1000), "keywords": ["a keyword of twenty chars", "another one, longer than that"]})


def wide_tool(every_property):
    """A tool's parameters: 50 properties of four types, every other one required; the instance
    gives every property, or leaves out some optional ones."""
    props, required, instance = {}, [], {}
    types = ["string", "integer", "boolean", "number"]
    for i in range(50):
        name = "parameter_%d" % i
        props[name] = {"type": types[i % 4], "description": "parameter number %d" % i}
        if i % 2 == 0:
            required.append(name)
        if i % 4 == 0:
            instance[name] = "value of %s with some words in it" % name
        elif i % 4 == 1:
            instance[name] = i * 37
        elif i % 4 == 2:
            instance[name] = i % 3 == 0
        elif i % 3 == 0 or every_property:
            instance[name] = i * 1.25
    return ({"type": "object", "properties": props, "required": required,
             "additionalProperties": False}, instance)


def suite_cases(folder):
    files = sorted(glob.glob(os.path.join(folder, "*.json")))
    files += [os.path.join(folder, "optional/format", f + ".json")
              for f in ("date", "time", "date-time", "email")]
    cases = []
    for path in files:
        stem = os.path.relpath(path, folder)[:-len(".json")]
        for k, group in enumerate(json.load(open(path))):
            valid = [t["data"] for t in group["tests"] if t["valid"]]
            if valid:
                cases.append({"name": "%s/%d" % (stem, k), "group": "json-schema-test-suite",
                              "schema": group["schema"], "instances": valid})
    return cases


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--suite", default="/usr/share/json-schema-test-suite/tests/draft7")
    a = p.parse_args()
    named = [("openai-math", OPENAI_MATH), ("openai-event", OPENAI_EVENT),
             ("openai-ui", OPENAI_UI), ("openai-paper", OPENAI_PAPER),
             ("openai-moderation", OPENAI_MODERATION), ("codex-review", CODEX_REVIEW),
             ("tool-50-properties", wide_tool(False)), ("tool-50-all-given", wide_tool(True)),
             ("recursive-tree", RECURSIVE_TREE),
             ("any-json", ANY_JSON), ("string-unbounded", UNBOUNDED_STRING),
             ("string-maxLength-8", BOUNDED_STRING), ("string-maxLength-280", STRING_280),
             ("string-min20-max1000", STRING_20_1000)]
    cases = [{"name": n, "group": n, "schema": s, "instances": [i]} for n, (s, i) in named]
    if os.path.isdir(a.suite):
        cases += suite_cases(a.suite)
    else:
        print("no JSON Schema Test Suite at %s: its cases are left out" % a.suite)
    with open(a.out, "w") as f:
        json.dump({"cases": cases}, f)
    print("%d cases written to %s" % (len(cases), a.out))


if __name__ == "__main__":
    main()

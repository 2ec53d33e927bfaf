"""Realistic trajectories in the three accepted shapes, shared by the tests."""

import json

OPENAI_MESSAGES = [
    {"role": "system", "content": "You are a shopping agent. Use the tools."},
    {
        "role": "user",
        "content": [{"type": "text", "text": "Find the price of the blue kettle and add it to the cart."}],
    },
    {
        "role": "assistant",
        "content": "I should search the catalogue first.",
        "tool_calls": [
            {
                "id": "call_a1",
                "type": "function",
                "function": {"name": "search_catalogue", "arguments": json.dumps({"query": "blue kettle"})},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_a1", "content": '[{"sku": "K-22", "price": 34.5}]'},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_a2", "type": "function", "function": {"name": "add_to_cart", "arguments": '{"sku": "K-22"}'}},
            {"id": "call_a3", "type": "function", "function": {"name": "view_cart", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_a2", "content": "error: out of stock"},
    {"role": "tool", "tool_call_id": "call_a3", "content": [{"type": "text", "text": "cart is empty"}]},
    {"role": "assistant", "content": "The kettle costs 34.50 but is out of stock, so I could not add it."},
]

ANTHROPIC_SYSTEM = [{"type": "text", "text": "You are a coding agent working in a git repository."}]

ANTHROPIC_MESSAGES = [
    {"role": "user", "content": "Make the failing test in tests/test_dates.py pass."},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "First run the test to see the failure.", "signature": "sig=="},
            {"type": "text", "text": "Running the test."},
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "bash",
                "input": {"command": "pytest tests/test_dates.py -q"},
            },
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01",
                "content": [{"type": "text", "text": "FAILED test_parse_iso - ValueError"}],
                "is_error": True,
            }
        ],
    },
    {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_02",
                "name": "str_replace",
                "input": {"path": "dates.py", "old": "%d", "new": "%m"},
            },
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_02", "content": "edited"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "Fixed the format string; the test passes now."}]},
]

NATIVE_STEPS = [
    {"thought": "The search box is at the top.", "action": "click('#search')", "observation": "search box focused"},
    {
        "thought": "Type the query.",
        "tool": "type_text",
        "arguments": {"text": "wireless mouse"},
        "observation": "typed",
    },
    {"action": "click('#go')", "error": "TimeoutError: #go not found"},
    {"kind": "observation", "content": "page reloaded", "is_error": False},
    {"refinement": "Re-check: the button id is #submit, not #go."},
]

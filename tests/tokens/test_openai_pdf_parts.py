"""A PDF on the Responses API bills its text plus a per-page amount that depends
on where the ``input_file`` sits: 4 in a message, 25 in a ``function_call_output``.

Modelled on pydantic/pydantic-ai recordings of the same one-page PDF (3 tokens of
text, "Dummy PDF file"):

* tests/models/cassettes/test_openai/test_document_url_input_force_download_response_api.yaml
  (gpt-4.1-nano, the PDF in the user message: billed 23; counted 44 with 25 a page);
* tests/models/cassettes/test_multimodal_tool_returns/test_multimodal_tool_return_matrix[tool_return_content-binary-document-openai_responses].yaml
  (gpt-5-mini, the PDF in a user message after the tool's result: billed 81, counted 102 before);
* ...[direct-binary-document-openai_responses].yaml (the PDF in the function's output: billed 131,
  counted 133).
"""

from __future__ import annotations

import base64

import orjson

from fidelity.tokens import framing_openai, media
from fidelity.tokens_check import count_prompt

from .test_tokens_openai_mechanisms import _pdf

URL = "https://api.openai.com/v1/responses"
DATA = "data:application/pdf;base64," + base64.b64encode(_pdf("Dummy PDF file")).decode()
FILE = {"file_data": DATA, "filename": "filename.pdf", "type": "input_file"}


def test_a_pdf_in_a_user_message_bills_its_text_and_4_a_page() -> None:
    body = {"input": [{"content": [{"text": "What is the main content on this document?", "type": "input_text"},
                                   FILE], "role": "user"}], "model": "gpt-4.1-nano", "stream": False}
    got = count_prompt(orjson.dumps(body), url=URL)
    assert got.tokens == 23 and got.kind == "pdf"
    assert [(p.tokens, p.rule) for p in got.media] == [(3 + 4, "openai pdf text + 4/page (input_file)")]


def test_a_pdf_a_function_returns_bills_25_a_page() -> None:
    call = {"arguments": "{}", "call_id": "call_1", "name": "get_file", "type": "function_call"}
    user = {"content": "Use the get_file tool now to retrieve a document file, then describe what you received.",
            "role": "user"}
    returned = {"call_id": "call_1", "output": [FILE], "type": "function_call_output"}
    attached = [{"call_id": "call_1", "output": "File attached", "type": "function_call_output"},
                {"content": [FILE], "role": "user"}]
    one = count_prompt(orjson.dumps({"input": [user, call, returned], "model": "gpt-5-mini"}), url=URL)
    two = count_prompt(orjson.dumps({"input": [user, call, *attached], "model": "gpt-5-mini"}), url=URL)
    assert [p.tokens for p in one.media] == [3 + media.OPENAI_PDF_PAGE["function_call_output"]]
    assert [p.tokens for p in two.media] == [3 + media.OPENAI_PDF_PAGE["input_file"]]
    pieces = framing_openai.message_pieces(returned, "gpt-5-mini", {"call_1": "get_file"})
    assert [p.part for p in pieces if isinstance(p, framing_openai.Media)] == ["function_call_output"]

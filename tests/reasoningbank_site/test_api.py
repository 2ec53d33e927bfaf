"""The OpenAPI document is the agents' contract: every operation lists the
JSON errors it can answer, with the one error shape."""

from reasoningbank_site.api import api


def test_every_operation_documents_its_error_statuses_with_the_error_shape(db):
    schema = api.get_openapi_schema()
    error_ref = "#/components/schemas/ErrorOut"
    assert set(schema["components"]["schemas"]["ErrorOut"]["required"]) == {"detail", "code"}
    operations = [(method, path, op) for path, ops in schema["paths"].items() for method, op in ops.items()]
    assert len(operations) >= 8
    for method, path, op in operations:
        responses = {str(status): spec for status, spec in op["responses"].items()}  # int keys until serialized
        if path.endswith("/otel/v1/traces"):
            # OTLP/HTTP: errors are a google.rpc.Status in the request's encoding, as the OTLP spec says.
            for status in ("400", "401", "403", "413", "415", "429"):
                content = responses[status]["content"]
                assert set(content) == {"application/json", "application/x-protobuf"}
                assert set(content["application/json"]["schema"]["properties"]) == {"code", "message"}
            continue
        for status in ("401", "403", "422", "429"):
            assert status in responses, f"{method.upper()} {path} does not document {status}"
            assert responses[status]["content"]["application/json"]["schema"]["$ref"] == error_ref
        if "{" in path:
            assert "404" in responses, f"{method.upper()} {path} takes an id but does not document 404"
        if method == "post":
            assert "413" in responses, f"POST {path} does not document 413"


def test_input_schemas_state_the_rules_the_server_enforces(db):
    components = api.get_openapi_schema()["components"]["schemas"]
    assert components["TrajectoryIn"]["oneOf"] == [{"required": ["steps"]}, {"required": ["messages"]}]
    assert components["TrajectoryIn"]["additionalProperties"] is False
    assert components["BatchIn"]["properties"]["trajectories"]["minItems"] == 1
    assert "pattern" in components["RetrieveIn"]["properties"]["query"]

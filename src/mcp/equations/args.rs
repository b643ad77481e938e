//! How the equation tools' arguments become requests: the request types of
//! [`crate::equations`] are the argument shapes themselves, and three of
//! them check their own fields before any work starts.

use crate::diagnostics::ToolError;
use crate::equations::{CorrectRequest, EvaluateRequest, OptimizeRequest, ValidateRequest};
use crate::mcp::args::IntoRequest;

impl IntoRequest for ValidateRequest {
    type Request = ValidateRequest;

    fn into_request(self) -> Result<ValidateRequest, ToolError> {
        Ok(self)
    }
}

impl IntoRequest for EvaluateRequest {
    type Request = EvaluateRequest;

    fn into_request(self) -> Result<EvaluateRequest, ToolError> {
        self.validate()?;
        Ok(self)
    }
}

impl IntoRequest for CorrectRequest {
    type Request = CorrectRequest;

    fn into_request(self) -> Result<CorrectRequest, ToolError> {
        self.validate()?;
        Ok(self)
    }
}

impl IntoRequest for OptimizeRequest {
    type Request = OptimizeRequest;

    fn into_request(self) -> Result<OptimizeRequest, ToolError> {
        self.validate()?;
        Ok(self)
    }
}

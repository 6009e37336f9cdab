//! The `--format` argument of the commands that render reports: a report format,
//! with the choices listed in `--help`.

/// Parses `--format` into a report format, listing the choices in `--help`.
pub fn format_parser() -> impl clap::builder::TypedValueParser<Value = conclave_review::ReportFormat> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(conclave_review::ReportFormat::ALL.map(|f| f.as_str()))
        .try_map(|name| name.parse::<conclave_review::ReportFormat>())
}

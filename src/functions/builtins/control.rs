//! The functions the compiler inlines (`pipeline`, `if`, `create_object`: signatures only,
//! no body) and `default`.

use super::*;

/// `pipeline`: the signature only; the compiler inlines it.
pub(super) fn pipeline() -> Function {
    inline(Signature::new(
        "pipeline",
        vec![Param::required("initial_value", Type::Any), Param::deferred("operations", ParamKind::Operations)],
        ReturnRule::Computed(|a| a[1].clone()),
        "runs operations in turn, each with `current` bound to the previous result",
    ))
}

/// `if`: the signature only; the compiler inlines it.
pub(super) fn r#if() -> Function {
    inline(Signature::new(
        "if",
        vec![
            Param::required("condition", Type::Any),
            Param::deferred("true_value", ParamKind::Lazy),
            Param::deferred("false_value", ParamKind::Lazy).or_null(),
        ],
        ReturnRule::Computed(|a| a[1].clone().union(a[2].clone())),
        "one of two values; only the chosen one is evaluated",
    ))
}

/// `create_object`: the signature only; the compiler inlines it.
pub(super) fn create_object() -> Function {
    inline(Signature {
        any_keywords: true,
        ..Signature::new(
            "create_object",
            vec![],
            fixed(Type::any_object()),
            "an object from keyword arguments, in order",
        )
    })
}

/// `default`: the signature; the body follows.
pub(super) fn default() -> Function {
    f(
        Signature::new(
            "default",
            vec![Param::required("value", Type::Any), Param::required("fallback", Type::Any)],
            ReturnRule::Computed(|a| a[0].non_null().union(a[1].clone())),
            "the value, or the fallback when the value is null",
        ),
        default_body,
    )
}

fn default_body(_: &mut dyn Caller, args: &Args<'_>) -> R {
    Ok(if args.get(0).is_null() { args.get(1).clone() } else { args.get(0).clone() })
}

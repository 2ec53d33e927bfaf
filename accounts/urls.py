from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from accounts.audit import views as audit
from accounts.teams import account_views as account
from accounts.teams import bank_views as banks
from accounts.teams import email_verification
from accounts.teams import views as teams
from accounts.tokens import views as tokens
from accounts.webhooks import views as webhooks
from reasoningbank_site.security import ThrottledPasswordResetView

app_name = "accounts"
urlpatterns: list = [
    path("", account.home, name="home"),
    # Account (Django's auth views; templates in templates/registration/)
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True, next_page="accounts:home"),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(next_page="accounts:login"), name="logout"),
    path("accounts/signup/", account.signup, name="signup"),
    path("accounts/verify/<uidb64>/<token>/", email_verification.verify_email, name="verify_email"),
    path(
        "accounts/password-reset/",
        ThrottledPasswordResetView.as_view(  # per-email and per-IP limits (reasoningbank_site.security)
            success_url=reverse_lazy("accounts:password_reset_done"),
            email_template_name="registration/password_reset_email.txt",
            subject_template_name="registration/password_reset_subject.txt",
        ),
        name="password_reset",
    ),
    path("accounts/password-reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "accounts/reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(success_url=reverse_lazy("accounts:password_reset_complete")),
        name="password_reset_confirm",
    ),
    path("accounts/reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    # Teams (the actions are POST only; members are named by a posted membership id)
    path("teams/new/", teams.team_create, name="team_create"),
    path("teams/<uuid:team_id>/", teams.team_detail, name="team"),
    path("teams/<uuid:team_id>/invite/", teams.team_invite, name="team_invite"),
    path("teams/<uuid:team_id>/members/role/", teams.member_change_role, name="member_change_role"),
    path("teams/<uuid:team_id>/members/remove/", teams.member_remove, name="member_remove"),
    path("teams/<uuid:team_id>/leave/", teams.team_leave, name="team_leave"),
    path(
        "teams/<uuid:team_id>/invitations/<uuid:invitation_id>/revoke/",
        teams.invitation_revoke,
        name="invitation_revoke",
    ),
    path("teams/<uuid:team_id>/banks/new/", banks.bank_create, name="bank_create"),
    path("teams/<uuid:team_id>/audit/", audit.team_audit, name="team_audit"),
    path("teams/<uuid:team_id>/audit.csv", audit.team_audit_csv, name="team_audit_csv"),
    path("invitations/<str:secret>/", teams.invitation_accept, name="invitation_accept"),
    # Banks (archive, unarchive and the token actions are POST only)
    path("banks/<uuid:bank_id>/settings/", banks.bank_settings, name="bank_settings"),
    path("banks/<uuid:bank_id>/archive/", banks.bank_archive, name="bank_archive"),
    path("banks/<uuid:bank_id>/unarchive/", banks.bank_unarchive, name="bank_unarchive"),
    path("banks/<uuid:bank_id>/tokens/", tokens.bank_tokens, name="bank_tokens"),
    path("banks/<uuid:bank_id>/tokens/new/", tokens.token_create, name="token_create"),
    path("banks/<uuid:bank_id>/tokens/<uuid:token_id>/revoke/", tokens.token_revoke, name="token_revoke"),
    path("banks/<uuid:bank_id>/audit/", audit.bank_audit, name="bank_audit"),
    path("banks/<uuid:bank_id>/webhooks/", webhooks.bank_webhooks, name="bank_webhooks"),
    path("banks/<uuid:bank_id>/webhooks/new/", webhooks.webhook_create, name="webhook_create"),
    path("banks/<uuid:bank_id>/webhooks/<uuid:webhook_id>/", webhooks.webhook_detail, name="webhook_detail"),
    path("banks/<uuid:bank_id>/webhooks/<uuid:webhook_id>/enable/", webhooks.webhook_enable, name="webhook_enable"),
    path(
        "banks/<uuid:bank_id>/webhooks/<uuid:webhook_id>/deliveries/<uuid:delivery_id>/redeliver/",
        webhooks.delivery_redeliver,
        name="delivery_redeliver",
    ),
    path("banks/<uuid:bank_id>/webhooks/<uuid:webhook_id>/remove/", webhooks.webhook_delete, name="webhook_delete"),
    path("banks/<uuid:bank_id>/audit.csv", audit.bank_audit_csv, name="bank_audit_csv"),
]

from django.templatetags.static import static


def test_favicon_ico_redirects_to_the_static_icon(client) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == static("favicon.svg")


def test_every_page_names_its_icon(client, db) -> None:
    html = client.get("/accounts/login/").content.decode()
    assert f'rel="icon" href="{static("favicon.svg")}"' in html
